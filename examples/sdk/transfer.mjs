// Transfers RBT between the two user nodes of a network started by `npx rbtnode testnet`, with the
// typed client, and prints where the transfer ended and both balances.
//
//   npx rbtnode testnet            # in one terminal
//   node examples/sdk/transfer.mjs [testnet directory] [amount]
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiError, RbtClient } from 'rbtnode/client'

const dir = process.argv[2] ?? './testnet'
const amount = Number(process.argv[3] ?? '1')
// the network's state file names each node's API port and DID, and the password of its DIDs
const net = JSON.parse(readFileSync(join(dir, 'testnet.json'), 'utf8'))
const [sender, receiver] = net.nodes.filter((n) => n.role === 'user')

const alice = new RbtClient({ baseUrl: `http://127.0.0.1:${sender.apiPort}` })
const bob = new RbtClient({ baseUrl: `http://127.0.0.1:${receiver.apiPort}` })
const balance = async (client, did) => {
  const env = await client.call('didBalancesRbt', { params: { did } })
  return env.result.balance
}

try {
  // one awaited call: the node asks for the sender's key password through the callback
  const result = await alice.transfer(
    { from: sender.did, to: receiver.did, amount, memo: 'sdk example' },
    { password: async () => net.password }
  )
  // 'committed', or 'delivery_pending' / 'signing_pending' with the transaction id to follow
  console.log(`${result.state} ${result.transactionId}`)
  console.log(`sender   ${sender.did} ${await balance(alice, sender.did)} RBT`)
  console.log(`receiver ${receiver.did} ${await balance(bob, receiver.did)} RBT`)
} catch (e) {
  if (e instanceof ApiError) {
    console.error(`refused (${e.code ?? 'no code'}, HTTP ${e.httpStatus}): ${e.message}`)
    process.exitCode = 1
  } else {
    throw e
  }
} finally {
  await alice.close()
  await bob.close()
}
