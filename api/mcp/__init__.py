"""The MCP server at /mcp: tools generated from the endpoint contracts (spec: "MCP server")."""
