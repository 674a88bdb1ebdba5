"""Memory items: memory files' frontmatter read strictly, compiled into items and their cues."""
