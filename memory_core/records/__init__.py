"""Records learned from sessions: extraction of decisions, dead ends and corrections from
transcripts, the capture queue, and triage into confirmed memory."""
