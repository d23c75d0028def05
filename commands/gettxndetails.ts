import { Flags } from '@oclif/core'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'
import type { Envelope } from '../src/api/contract/envelope.js'
import type { TxResult } from '../src/api/contract/routes.js'

export default class GetTxnDetails extends BaseCommand {
  static override summary = 'Transaction history: by id (-txnID), of a DID (-did, -role Sender|Receiver, both when absent) or by comment (-transComment); one line per transaction: id, type, token type, sender, receiver, amount, status, epoch, comment'
  static override flags = {
    txnID: Flags.string({ description: 'transaction id', helpGroup: 'TRANSACTIONS' }),
    role: Flags.string({ description: 'with -did: Sender or Receiver (case-insensitive); both when absent', helpGroup: 'TRANSACTIONS' })
  }

  static override examples = [
    '<%= config.bin %> gettxndetails -txnID 3f2a...',
    '<%= config.bin %> gettxndetails -did bafybmi... -role Sender',
    '<%= config.bin %> gettxndetails -transComment rent'
  ]

  async run (): Promise<void> {
    const f = this.flags as typeof this.flags & { txnID?: string, role?: string }
    const client = this.client()
    if (f.txnID !== undefined && f.txnID !== '') {
      const env = await client.call('legacyGetByTxnId', { query: { txnID: f.txnID } })
      this.finish(env, (t) => line(t))
      return
    }
    if (f.did !== undefined && f.did !== '') {
      const did = didValue(f.did, 'did')
      const role = f.role === undefined || f.role === '' ? undefined : roleOf(f.role)
      const roles = role === undefined ? ['Sender', 'Receiver'] as const : [role]
      const envs = await Promise.all(roles.map(async (Role) => await client.call('legacyGetByDid', { query: { DID: did, Role } })))
      // a DID's transfers to itself appear under both roles: once each
      const byId = new Map<string, TxResult>()
      for (const e of envs) for (const t of e.result ?? []) byId.set(t.transactionID, t)
      const all: Envelope<TxResult[]> = { ...envs[envs.length - 1]!, result: [...byId.values()].sort((a, b) => a.epoch - b.epoch) }
      this.finish(all, (ts) => ts.map(line).join('\n'))
      return
    }
    if (f.transComment !== undefined && f.transComment !== '') {
      const env = await client.call('legacyGetByComment', { query: { Comment: f.transComment } })
      this.finish(env, (ts) => ts.map(line).join('\n'))
      return
    }
    throw new UsageError('one of -txnID, -did or -transComment is required')
  }
}

function roleOf (v: string): 'Sender' | 'Receiver' {
  const r = v.toLowerCase()
  if (r === 'sender') return 'Sender'
  if (r === 'receiver') return 'Receiver'
  throw new UsageError(`-role must be Sender or Receiver, got "${v}"`)
}

function line (t: TxResult): string {
  return [t.transactionID, t.transaction_type, t.token_type, t.sender || '-', t.receiver || '-', t.amount, t.status, t.epoch, t.memo === '' ? '-' : JSON.stringify(t.memo)].join(' ')
}
