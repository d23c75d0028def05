import { readFile, stat } from 'node:fs/promises'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'

const HEX_KEY = /^(?:[0-9a-fA-F]{66}|[0-9a-fA-F]{130})$/

export default class CreateDidFromPubKey extends BaseCommand {
  static override summary = "Create (or find) the lite DID of an external wallet's secp256k1 public key; the node keeps no private key for it and asks the wallet to sign. -pubKeyFile names a file holding the key in hex, or is the hex key itself (as the reference sends it); prints the DID"
  static override examples = [
    '<%= config.bin %> createdidfrompubkey -pubKeyFile wallet-pub.hex',
    '<%= config.bin %> createdidfrompubkey -pubKeyFile 03a1b2...'
  ]

  async run (): Promise<void> {
    const value = this.requireFlag('pubKeyFile', 'a file holding the public key in hex, or the hex key')
    const key = await keyFrom(value)
    const env = await this.client().call('didCreate', { body: { type: 4, public_key: key } })
    if (this.flags.json) {
      this.print(JSON.stringify(env, null, 2))
      return
    }
    const did = env.result?.did ?? ''
    this.info(`DID ${did} created successfully`)
    this.print(did)
  }
}

/** The key in a file named by the flag, else the flag's value itself (the reference's quirk). */
async function keyFrom (value: string): Promise<string> {
  let text = value
  const isFile = await stat(value).then((s) => s.isFile(), () => false)
  if (isFile) {
    if ((await stat(value)).size > 4096) throw new UsageError(`${value} (-pubKeyFile) is too large for a public key`)
    text = (await readFile(value, 'utf8')).trim()
  }
  if (!HEX_KEY.test(text)) {
    throw new UsageError(`-pubKeyFile: ${isFile ? `${value} does not hold` : `"${value}" is neither a file nor`} a secp256k1 public key in hex (66 or 130 hex digits)`)
  }
  return text.toLowerCase()
}
