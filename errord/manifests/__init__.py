"""Tool manifests: the records, the immutable snapshot, and reading them from YAML files."""
