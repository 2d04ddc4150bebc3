"""Source-owned store definitions and adapters, one module per agent."""
