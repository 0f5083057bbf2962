"""Reading tool manifests from YAML files into the engine's records (errord.decide.manifest)."""
