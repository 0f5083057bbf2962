"""Generated from protos/errord/v1 by clients/python/genproto.py; never edit."""
