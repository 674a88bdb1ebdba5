"""What hooks record for export and for the gate, written before and beside their work:
heartbeats, spans, decisions and degradations, metric rollups, the journal and the spill."""
