"""What reaches Claude: prompt intent, the injection cascade, cues, the session-start render
and ablation of injection."""
