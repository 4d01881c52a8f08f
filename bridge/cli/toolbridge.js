#!/usr/bin/env node
// The `toolbridge` command. Plain JavaScript so that Node's compile cache is on
// before the first TypeScript file is read: with it, the type-stripped source of
// every module is kept on disk (in the OS temp directory, or NODE_COMPILE_CACHE)
// and later runs skip loading the type stripper and stripping again.
import { enableCompileCache } from 'node:module'

enableCompileCache()
await import('./main.ts')
