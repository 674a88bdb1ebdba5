"""What hooks record for export and for the gate, written before and beside their work:
heartbeats, spans, decisions and degradations, metric rollups, the journal and the spill;
the records the gate, the transcript witness, the alert budget and render novelty keep
(gate_log, witness_log, alert_log, novelty_log); and the read models over them (the
`*_reads` modules), so callers above ask named questions instead of embedding SQL."""
