import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_CONFIG_KEY, decryptApiConfig, defaultApiConfig, encryptApiConfig } from '../../../src/config/api-config.js'
import { resolveNodeOptions } from '../../../src/config/node-options.js'
import { RbtError } from '../../../src/util/errors.js'

describe('config: encrypted api_config.json', () => {
  it('reads a file built independently the way the reference writes it', () => {
    const nonce = Buffer.from('000102030405060708090a0b', 'hex')
    const key = createHash('sha256').update(Buffer.concat([nonce, Buffer.from('TestKeyBasic#2022')])).digest()
    const c = createCipheriv('aes-256-gcm', key, nonce)
    const plain = JSON.stringify({ node_address: 'localhost', node_port: 20005, dir_path: './', cfg_data: { ports: { sender_port: 21005, receiver_port: 27000, ipfs_port: 5007, swarm_port: 4007, ipfs_api_port: 8086 }, bootstrap: ['/ip4/1.2.3.4/tcp/4001/p2p/12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'], test_bootstrap: [] } })
    const data = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()])
    const file = JSON.stringify({ rand: nonce.toString('base64'), data: data.toString('base64') })
    const cfg = decryptApiConfig(file, 'TestKeyBasic#2022')
    expect(cfg.node_port).to.equal(20005)
    expect(cfg.cfg_data.ports.swarm_port).to.equal(4007)
  })

  it('round-trips and refuses a wrong key or a damaged file', () => {
    const cfg = defaultApiConfig(3, '/x')
    const text = encryptApiConfig(cfg, 'k1')
    expect(decryptApiConfig(text, 'k1')).to.deep.equal(cfg)
    expect(() => decryptApiConfig(text, 'k2')).to.throw(RbtError, /wrong -k key/)
    expect(() => decryptApiConfig('{"rand":"AAAA","data":"AAAA"}', 'k1')).to.throw(RbtError, /damaged/)
    expect(() => decryptApiConfig('not json', 'k1')).to.throw(RbtError, /not valid JSON/)
  })

  it('uses the reference port defaults for node n', () => {
    const c = defaultApiConfig(2, '/x')
    expect(c.node_port).to.equal(20002)
    expect(c.cfg_data.ports).to.deep.equal({ sender_port: 21002, receiver_port: 24000, ipfs_port: 5004, swarm_port: 4004, ipfs_api_port: 8083 })
  })
})

describe('config: resolveNodeOptions', () => {
  let dir = ''
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'rbtnode-cfg-')) })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  it('creates the encrypted config on first start and reads it back', () => {
    const o = resolveNodeOptions({ p: 'node4', n: 4 }, dir)
    expect(o.apiPort).to.equal(20004)
    expect(o.swarmPort).to.equal(4006)
    expect(o.apiHost).to.equal('127.0.0.1')
    expect(o.startCore).to.equal(true)
    expect(o.dataDir).to.equal(join(dir, 'node4', 'Rubix', 'MainNet'))
    const text = readFileSync(join(dir, 'node4', 'api_config.json'), 'utf8')
    expect(text).to.not.match(/20004/) // encrypted at rest
    expect(decryptApiConfig(text, 'TestKeyBasic#2022').node_port).to.equal(20004)
    // flags win over the file
    expect(resolveNodeOptions({ p: 'node4', n: 4, port: 1234, s: false }, dir)).to.include({ apiPort: 1234, startCore: false })
  })

  it('resolves -testNetKey against the current directory, and falls back to the packaged key', () => {
    writeFileSync(join(dir, 'mine.key'), '/key/swarm/psk/1.0.0/\n/base16/\n' + 'ab'.repeat(32))
    expect(resolveNodeOptions({ p: 'a', testNet: true, testNetKey: 'mine.key' }, dir).swarmKeyPath).to.equal(join(dir, 'mine.key'))
    expect(resolveNodeOptions({ p: 'b', testNet: true }, dir).swarmKeyPath).to.equal(undefined)
    expect(() => resolveNodeOptions({ p: 'c', testNet: true, testNetKey: 'missing.key' }, dir)).to.throw(RbtError, /does not exist/)
  })

  it('release-2.6 listener: -legacyPort or the config; proof-of-work level from the config or RBTNODE_POW_LEVEL', () => {
    expect(resolveNodeOptions({ p: 'l' }, dir)).to.include({ legacyPort: undefined, legacyPowLevel: 6 })
    expect(resolveNodeOptions({ p: 'l', legacyPort: 1898 }, dir).legacyPort).to.equal(1898)
    const path = join(dir, 'l', 'api_config.json')
    const cfg = decryptApiConfig(readFileSync(path, 'utf8'), 'TestKeyBasic#2022')
    cfg.cfg_data.rbtnode = { legacy_port: 1899, legacy_pow_level: 3 }
    writeFileSync(path, encryptApiConfig(cfg, 'TestKeyBasic#2022'))
    expect(resolveNodeOptions({ p: 'l' }, dir)).to.include({ legacyPort: 1899, legacyPowLevel: 3 })
    const saved = process.env.RBTNODE_POW_LEVEL
    try {
      process.env.RBTNODE_POW_LEVEL = '2'
      expect(resolveNodeOptions({ p: 'l' }, dir).legacyPowLevel).to.equal(2)
      process.env.RBTNODE_POW_LEVEL = '0'
      expect(() => resolveNodeOptions({ p: 'l' }, dir)).to.throw(RbtError, /proof-of-work level/)
    } finally {
      if (saved === undefined) delete process.env.RBTNODE_POW_LEVEL
      else process.env.RBTNODE_POW_LEVEL = saved
    }
  })

  it('mDNS discovery: on by default; -mdns, then RBTNODE_MDNS, then the config decide', () => {
    const saved = { on: process.env.RBTNODE_MDNS, ms: process.env.RBTNODE_MDNS_INTERVAL_MS }
    try {
      delete process.env.RBTNODE_MDNS
      delete process.env.RBTNODE_MDNS_INTERVAL_MS
      expect(resolveNodeOptions({ p: 'm' }, dir)).to.include({ mdns: true, mdnsIntervalMs: 10_000 })
      expect(resolveNodeOptions({ p: 'm', mdns: false }, dir).mdns).to.equal(false)
      const path = join(dir, 'm', 'api_config.json')
      const cfg = decryptApiConfig(readFileSync(path, 'utf8'), 'TestKeyBasic#2022')
      cfg.cfg_data.rbtnode = { ...cfg.cfg_data.rbtnode, mdns: false }
      writeFileSync(path, encryptApiConfig(cfg, 'TestKeyBasic#2022'))
      expect(resolveNodeOptions({ p: 'm' }, dir).mdns).to.equal(false)
      process.env.RBTNODE_MDNS = '1'
      expect(resolveNodeOptions({ p: 'm' }, dir).mdns).to.equal(true)
      expect(resolveNodeOptions({ p: 'm', mdns: false }, dir).mdns).to.equal(false)
      process.env.RBTNODE_MDNS = '0'
      expect(resolveNodeOptions({ p: 'm', mdns: true }, dir).mdns).to.equal(true)
      expect(resolveNodeOptions({ p: 'm' }, dir).mdns).to.equal(false)
      process.env.RBTNODE_MDNS = 'maybe'
      expect(() => resolveNodeOptions({ p: 'm' }, dir)).to.throw(RbtError, /RBTNODE_MDNS must be 0 or 1/)
      process.env.RBTNODE_MDNS = '1'
      process.env.RBTNODE_MDNS_INTERVAL_MS = '1500'
      expect(resolveNodeOptions({ p: 'm' }, dir).mdnsIntervalMs).to.equal(1500)
      process.env.RBTNODE_MDNS_INTERVAL_MS = '5'
      expect(() => resolveNodeOptions({ p: 'm' }, dir)).to.throw(RbtError, /RBTNODE_MDNS_INTERVAL_MS/)
    } finally {
      for (const [k, v] of [['RBTNODE_MDNS', saved.on], ['RBTNODE_MDNS_INTERVAL_MS', saved.ms]] as const) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    }
  })

  it('smart-contract callbacks: rbtnode.callback_hosts narrows where they may go; none by default', () => {
    expect(resolveNodeOptions({ p: 'h' }, dir).callbackHosts).to.deep.equal([])
    const path = join(dir, 'h', 'api_config.json')
    const cfg = decryptApiConfig(readFileSync(path, 'utf8'), 'TestKeyBasic#2022')
    cfg.cfg_data.rbtnode = { ...cfg.cfg_data.rbtnode, callback_hosts: [' Hooks.LAN ', '192.168.1.5'] }
    writeFileSync(path, encryptApiConfig(cfg, 'TestKeyBasic#2022'))
    expect(resolveNodeOptions({ p: 'h' }, dir).callbackHosts).to.deep.equal(['hooks.lan', '192.168.1.5'])
    cfg.cfg_data.rbtnode = { ...cfg.cfg_data.rbtnode, callback_hosts: 'hooks.lan' as never }
    writeFileSync(path, encryptApiConfig(cfg, 'TestKeyBasic#2022'))
    expect(() => resolveNodeOptions({ p: 'h' }, dir)).to.throw(RbtError, /callback_hosts/)
    cfg.cfg_data.rbtnode = { ...cfg.cfg_data.rbtnode, callback_hosts: ['http://hooks.lan/x'] }
    writeFileSync(path, encryptApiConfig(cfg, 'TestKeyBasic#2022'))
    expect(() => resolveNodeOptions({ p: 'h' }, dir)).to.throw(RbtError, /callback_hosts/)
  })

  it('rejects a bad node number', () => {
    expect(() => resolveNodeOptions({ p: 'x', n: -1 }, dir)).to.throw(RbtError, /-n must be/)
  })

  it('writes the config again when a crash left it empty (its first write cut short), and refuses a damaged one with the way out', () => {
    const first = resolveNodeOptions({ p: 'e', n: 3 }, dir)
    writeFileSync(first.configPath, '')
    const again = resolveNodeOptions({ p: 'e', n: 3 }, dir)
    expect(again.notices?.join('\n')).to.match(/was empty .*written again with the defaults/)
    expect(again.apiPort).to.equal(20003)
    expect(decryptApiConfig(readFileSync(first.configPath, 'utf8'), DEFAULT_CONFIG_KEY)).to.deep.equal(first.config)
    writeFileSync(first.configPath, readFileSync(first.configPath, 'utf8').slice(0, 40))
    expect(() => resolveNodeOptions({ p: 'e', n: 3 }, dir)).to.throw(RbtError, /restore it from a backup or move it away/)
  })
})
