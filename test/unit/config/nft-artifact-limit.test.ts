import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_CONFIG_KEY, defaultApiConfig, encryptApiConfig } from '../../../src/config/api-config.js'
import { resolveNodeOptions } from '../../../src/config/node-options.js'

describe('config: the NFT artifact limit (-nftArtifactLimit, rbtnode.nft_artifact_limit)', () => {
  const dirs: string[] = []
  after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })
  const workDir = (setting?: number | string): string => {
    const d = mkdtempSync(join(tmpdir(), 'rbt-limit-'))
    dirs.push(d)
    if (setting !== undefined) {
      const cfg = defaultApiConfig(0, d)
      cfg.cfg_data.rbtnode = { nft_artifact_limit: setting }
      writeFileSync(join(d, 'api_config.json'), encryptApiConfig(cfg, DEFAULT_CONFIG_KEY))
    }
    return d
  }

  it('is 4 GiB by default, the config key otherwise, the flag above both', () => {
    expect(resolveNodeOptions({ p: workDir() }).nftArtifactLimit).to.equal(4 * 1024 ** 3)
    expect(resolveNodeOptions({ p: workDir('10GiB') }).nftArtifactLimit).to.equal(10 * 1024 ** 3)
    expect(resolveNodeOptions({ p: workDir(123456) }).nftArtifactLimit).to.equal(123456)
    expect(resolveNodeOptions({ p: workDir('10GiB'), nftArtifactLimit: '500MiB' }).nftArtifactLimit).to.equal(500 * 1024 ** 2)
  })

  it('refuses sizes that are not sizes, or out of 1 KiB to 1 TiB, naming the setting', () => {
    expect(() => resolveNodeOptions({ p: workDir(), nftArtifactLimit: 'lots' })).to.throw(/-nftArtifactLimit must be a size/)
    expect(() => resolveNodeOptions({ p: workDir(), nftArtifactLimit: '100' })).to.throw(/-nftArtifactLimit/)
    expect(() => resolveNodeOptions({ p: workDir('2TiB') })).to.throw(/rbtnode.nft_artifact_limit must be a size/)
  })
})
