import { expect } from 'chai'
import { readdirSync, readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import { ROOT } from '../helpers/cli.js'

describe('cli: oclif.manifest.json', () => {
  it('lists exactly the commands in commands/ with their flags', async () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, { flags: Record<string, unknown> }> }
    // commands/testnet/status.ts is the command `testnet:status` (`rbtnode testnet status`)
    const files = (readdirSync(join(ROOT, 'commands'), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'))
      .map((f) => f.replace(/\.ts$/, '').split(sep).join(':')).sort()
    expect(Object.keys(manifest.commands).sort(), 'regenerate with `npm run manifest`').to.deep.equal(files)
    for (const id of files) {
      const mod = await import(join(ROOT, 'dist', 'commands', ...id.split(':')) + '.js')
      const C = mod.default as { flags?: Record<string, unknown>, baseFlags?: Record<string, unknown> }
      const expected = Object.keys({ ...C.baseFlags, ...C.flags }).sort()
      expect(Object.keys(manifest.commands[id].flags).sort(), `flags of ${id} (regenerate with npm run manifest)`).to.deep.equal(expected)
    }
  })
})
