"""Health checks over typed evidence, the embedding probe, the gate verdict, and the alert
budget policy.

    from probes import gate
    verdict = gate.run(evidence)          # every check, each a small function
    print(verdict.text())                 # MEMORY-HEALTH: 11/11 GREEN

Depends on `memory_core` (and the stdlib-only `telemetry.catalog` data) only. Import-light: the session-start hook
runs the gate; httpx is imported only when embeddings are configured.
"""
