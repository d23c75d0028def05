// Runs a node inside this program on the test network, creates a DID, mints test RBT for it and
// prints its balance, then stops the node.
//
//   node examples/sdk/embed.mjs [working directory]
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNode } from 'rbtnode'

const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'rbtnode-embedded-'))
const password = 'embedded-example'
// the same options as `rbtnode run`: working directory, ports, network, discovery
const node = await startNode({ p: dir, port: 20990, swarmPort: 4990, testNet: true, mdns: false, logLevel: 'WARN' })
try {
  console.log(`node ${node.peerId} at ${node.url}`)
  const { client } = node
  const did = (await client.call('didCreate', { body: { type: 4, password } })).result.did
  await client.signed('tokensGenerateLocalRbt', { body: { did, number_of_tokens: 5 } }, { password: () => password })
  const balance = (await client.call('didBalancesRbt', { params: { did } })).result.balance
  console.log(`${did} holds ${balance} RBT`)
} finally {
  await node.stop()
}
