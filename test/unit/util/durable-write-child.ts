// Rewrites one file in a loop, each version a whole JSON document, until killed.
import { writeFileDurableSync } from '../../../src/util/durable-write.js'

const path = process.argv[2]!
const filler = 'y'.repeat(64 * 1024)
process.stdout.write('ready\n')
for (let i = 0; ; i++) writeFileDurableSync(path, JSON.stringify({ i, filler }))
