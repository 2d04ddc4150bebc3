"""Event documents (ECS + OpenTelemetry GenAI names); redaction happens here, once."""
