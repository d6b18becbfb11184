#!/usr/bin/env node
// The `codex-agent-api` command (package.json `bin`: dist/cli.js, which the README, `npm start`, the bench and the
// tests run). The CLI itself is main/cli.ts.
import "./main/cli.js";
