"""Test support that is more than a fixture: the real embedding model and its server."""
