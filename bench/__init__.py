"""API throughput benchmark (see bench/README.md)."""
