"""Health checks over typed evidence, the embedding probe, the gate verdict, and the alert
budget policy.

    from probes import gate
    verdict = gate.run(evidence)          # every check, each a small function
    print(verdict.text())                 # MEMORY-HEALTH: 11/11 GREEN

Depends on `memory_core` and the stdlib-only data in `telemetry.catalog` and `telemetry.slo`. Import-light: the session-start hook
runs the gate; the embedding probe speaks plain http through memory_core.index.http (httpx only
for an https:// URL), and only when embeddings are configured.
"""
