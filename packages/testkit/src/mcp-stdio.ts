#!/usr/bin/env node
/** Entry: `node packages/testkit/dist/mcp-stdio.js` serves the default test MCP tools over stdio. */
import { runMcpStdioServer } from "./mcp.js";

await runMcpStdioServer();
