#!/usr/bin/env node
// The package's bin: runs the TypeScript CLI through tsx's loader (Node 20 cannot strip types).
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
