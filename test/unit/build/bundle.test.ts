import { expect } from 'chai'
import { entryPoints, fastEntryPoints, fastIndex, isFastVerb } from '../../../build/bundle.js'

describe('build: the fast path\'s entries and index', () => {
  it('takes every command but help, run and the test network\'s topic', () => {
    for (const id of ['getallbootstrap', 'transferrbt', 'syncwallet', 'checkQuorumStatus']) expect(isFastVerb(id), id).to.equal(true)
    for (const id of ['help', 'run', 'testnet', 'testnet/status', 'testnet/stop']) expect(isFastVerb(id), id).to.equal(false)
    const fast = fastEntryPoints()
    const commands = Object.keys(entryPoints()).filter((e) => e.startsWith('commands/'))
    expect(Object.keys(fast).filter((e) => e.startsWith('commands/')).sort()).to.deep.equal(commands.filter((e) => isFastVerb(e.slice('commands/'.length))).sort())
    expect(fast['cli/deps']).to.equal('src/cli/deps.ts')
  })

  it('indexes the built verbs by id and alias, leaving out what was not built', () => {
    const manifest = { commands: { syncwallet: { aliases: ['sync'] }, getalldid: {}, run: { aliases: [] }, 'testnet:status': {}, x: { hiddenAliases: ['y'] } } }
    expect(fastIndex(manifest, ['commands/syncwallet', 'commands/getalldid', 'commands/x', 'cli/deps'])).to.deep.equal({
      syncwallet: 'commands/syncwallet.js',
      sync: 'commands/syncwallet.js',
      getalldid: 'commands/getalldid.js',
      x: 'commands/x.js',
      y: 'commands/x.js'
    })
  })
})
