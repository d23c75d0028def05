import { basename, resolve } from 'node:path'
import { readFile, stat } from 'node:fs/promises'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { completeTwoStep } from '../src/cli/password.js'

async function readInput (flag: string, path: string): Promise<Uint8Array> {
  try {
    return await readFile(resolve(path))
  } catch (e) {
    throw new UsageError(`-${flag}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
}

export default class CreateNft extends BaseCommand {
  static override summary = 'Create an NFT from a JSON metadata file and an artifact file (the id is derived from the DID and the content)'
  static override examples = [
    '<%= config.bin %> create-nft -did bafybmi... -metadata meta.json -artifact picture.png',
    '<%= config.bin %> create-nft -did bafybmi... -metadata meta.json -artifact song.mp3 -port 20001'
  ]

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the DID creating the NFT')
    const metadataPath = this.requireFlag('metadata', 'the JSON metadata file')
    const artifactPath = this.requireFlag('artifact', 'the file the NFT stands for')
    const metadata = await readInput('metadata', metadataPath)
    // the artifact is sent as it is read from disk (it may be gigabytes), never held whole
    const artifact = resolve(artifactPath)
    try {
      if (!(await stat(artifact)).isFile()) throw new UsageError(`-artifact: ${artifactPath} is not a file`)
    } catch (e) {
      if (e instanceof UsageError) throw e
      throw new UsageError(`-artifact: cannot read ${artifactPath}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
    }
    try { JSON.parse(Buffer.from(metadata).toString('utf8')) } catch { throw new UsageError(`-metadata: ${metadataPath} is not a JSON document`) }
    const client = this.client()
    const first = await client.call('nftsGenerate', {
      form: {
        fields: { did, artifact_name: basename(artifactPath) },
        files: { metadata: { filename: basename(metadataPath), data: metadata }, artifact: { filename: basename(artifactPath), path: artifact } }
      }
    })
    const env = await completeTwoStep(client, first, this.flags)
    const id = typeof env.result === 'string' ? env.result : ''
    this.finish(env, () => id)
    if (!this.flags.json && id !== '') this.info(`NFT id ${id} (creator ${did}); deploy it with deploy-nft -nft ${id}`)
  }
}
