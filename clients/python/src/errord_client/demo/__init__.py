"""A demo of the executor: scripted flaky tools, run against a running errord, with each
of errord's decisions printed as the executor follows it.

    errord serve --listen 127.0.0.1:50061 --db demo.db \\
        --manifests "$(python -m errord_client.demo --manifests)" &
    python -m errord_client.demo --target 127.0.0.1:50061

Four scenarios (``scenarios``): a timeout that recovers, a rate limit with Retry-After,
an auth failure with an alternative, and a wrong argument the scripted model corrects.
``narration`` watches each turn's trace and prints what errord decided; ``walkthrough``
runs them. The demo's tool manifests ship beside it (``manifests_directory()``).
"""

from errord_client.demo.walkthrough import manifests_directory, run_demo

__all__ = ["manifests_directory", "run_demo"]
