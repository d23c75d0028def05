import { readFile, stat } from 'node:fs/promises'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { passwordFrom } from '../src/cli/password.js'
import type { FormInput } from '../src/client/rbt-client.js'

const MAX_UPLOAD_FILE = 4 * 1024 * 1024

export default class CreateDid extends BaseCommand {
  static override summary = 'Create a DID on the node (image files are read here and uploaded)'
  static override description = `Types: 0 basic (uploads -imgFile), 1 standard (uploads -imgFile and -pubKeyFile), 2 wallet (uploads -didImgFile, -pubImgFile and -pubKeyFile; the private share and key stay here), 4 lite (BIP-39: -mnemonic and -childPath restore a DID).
Files are resolved against the current directory. Passwords: -privPWD/-quorumPWD (default mypassword), or -fp to type them.`

  static override examples = [
    '<%= config.bin %> createdid -didType 0 -imgFile image.png',
    '<%= config.bin %> createdid -didType 2 -didImgFile did.png -pubImgFile pubShare.png -pubKeyFile pubKey.pem',
    '<%= config.bin %> createdid -didType 4 -fp'
  ]

  private async file (flag: string, path: string): Promise<{ filename: string, data: Uint8Array }> {
    let size: number
    try {
      const st = await stat(path)
      if (!st.isFile()) throw new Error('not a regular file')
      size = st.size
    } catch (e) {
      throw new UsageError(`cannot read ${path} (-${flag}): ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`)
    }
    if (size > MAX_UPLOAD_FILE) throw new UsageError(`${path} (-${flag}) is larger than ${MAX_UPLOAD_FILE} bytes`)
    return { filename: path.split(/[\\/]/).pop() ?? path, data: new Uint8Array(await readFile(path)) }
  }

  async run (): Promise<void> {
    const f = this.flags
    const typeText = f.didType ?? '0'
    if (!/^[0-4]$/.test(typeText) || typeText === '3') throw new UsageError(`-didType must be 0 (basic), 1 (standard), 2 (wallet) or 4 (lite), got "${typeText}"`)
    const type = Number(typeText)
    let childPath: number | undefined
    if (f.childPath !== undefined) {
      if (!/^\d+$/.test(f.childPath) || Number(f.childPath) > 0xffffffff) throw new UsageError(`-childPath must be a non-negative integer, got "${f.childPath}"`)
      childPath = Number(f.childPath)
    }
    const files: NonNullable<FormInput['files']> = {}
    if (type === 0 || type === 1) files['image.png'] = await this.file('imgFile', f.imgFile ?? 'image.png')
    if (type === 1) files['pubKey.pem'] = await this.file('pubKeyFile', f.pubKeyFile ?? 'pubKey.pem')
    if (type === 2) {
      files['did.png'] = await this.file('didImgFile', f.didImgFile ?? 'did.png')
      files['pubShare.png'] = await this.file('pubImgFile', f.pubImgFile ?? 'pubShare.png')
      files['pubKey.pem'] = await this.file('pubKeyFile', f.pubKeyFile ?? 'pubKey.pem')
    }
    // an existing private key is used only when named explicitly
    if ((type === 0 || type === 4) && f.privKeyFile !== undefined) files['pvtKey.pem'] = await this.file('privKeyFile', f.privKeyFile)

    const config: Record<string, unknown> = { type }
    if (type === 0 || type === 4) config.priv_pwd = await passwordFrom(f, 'privPWD', 'private key password')
    if (type !== 4) config.quorum_pwd = await passwordFrom(f, 'quorumPWD', 'quorum key password')
    if (f.didSecret !== undefined) config.secret = f.didSecret
    if (f.mnemonic !== undefined) config.mnemonic = f.mnemonic
    if (childPath !== undefined) config.childPath = childPath

    const env = await this.client().call('didCreate', { form: { fields: { did_config: JSON.stringify(config) }, files } })
    if (f.json) {
      this.print(JSON.stringify(env, null, 2))
      return
    }
    const did = env.result?.did ?? ''
    this.info(`DID ${did} created successfully`)
    this.print(did)
  }
}
