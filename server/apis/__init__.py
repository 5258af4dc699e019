"""Request handlers, one module per family of APIs. Each handler takes (ctx, request) and returns the response."""
