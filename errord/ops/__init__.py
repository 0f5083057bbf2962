"""Running as a service: systemd notification and watchdog, metrics, logging, write health."""
