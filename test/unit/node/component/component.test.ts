import { expect } from 'chai'
import { getMaxListeners } from 'node:events'
import { ComponentSet, runByDependencies, type Component, type ComponentList, type Factory } from '../../../../src/node/component/component.js'
import { dataDirLayout } from '../../../../src/node/component/data-dir.js'
import type { NodeOptions } from '../../../../src/config/node-options.js'
import type { Logger } from '../../../../src/util/logger.js'

/** A logger that records the names of the child loggers made from it. */
function namingLogger (names: string[], prefix = ''): Logger {
  const noop = (): void => {}
  return { debug: noop, info: noop, warn: noop, error: noop, child: (p) => { names.push(prefix + p); return namingLogger(names, `${prefix}${p}.`) } }
}

const base = (logger: Logger): ConstructorParameters<typeof ComponentSet>[1] => ({
  options: {} as NodeOptions, layout: dataDirLayout('/nonexistent'), logger, ownPorts: new Set(), shutdown: () => {}
})

describe('node/component: ComponentSet', () => {
  it('builds each component from the ones before it, starts them in order and stops them in reverse', async () => {
    const events: string[] = []
    const mk = (name: string): Factory<{}, Component> => () => ({ start: () => { events.push(`start ${name}`) }, stop: () => { events.push(`stop ${name}`) } })
    const a: Factory<{}, Component & { value: number }> = () => ({ value: 41, start: () => { events.push('start a') }, stop: () => { events.push('stop a') } })
    const b: Factory<{ a: { value: number } }, Component & { value: number }> = ({ a }) => ({ value: a.value + 1 })
    const list: ComponentList = [['a', a], ['b', b], ['c', mk('c')], ['d', mk('d')]]
    const set = new ComponentSet(list, base(namingLogger([])))
    expect((set.byName.get('b') as { value: number }).value).to.equal(42)
    await set.start()
    await set.stop(namingLogger([]))
    expect(events).to.deep.equal(['start a', 'start c', 'start d', 'stop d', 'stop c', 'stop a'])
  })

  it('a factory that reads a component listed after it fails at once, naming both', () => {
    const early: Factory<{ late: Component }, Component> = ({ late }) => ({ start: () => { void late } })
    expect(() => new ComponentSet([['early', early], ['late', () => ({})]], base(namingLogger([])))).to.throw(/early needs late/)
  })

  it('gives each component a child logger named after it and all of them one signal, aborted at stop, its listener limit lifted', async () => {
    const names: string[] = []
    const signals: AbortSignal[] = []
    const spy: Factory<{}, Component> = ({ base }) => { signals.push(base.signal); return {} }
    const set = new ComponentSet([['first', spy], ['second', spy]], base(namingLogger(names)))
    expect(names).to.deep.equal(['first', 'second'])
    expect(signals[0]).to.equal(signals[1])
    expect(getMaxListeners(signals[0])).to.equal(Infinity)
    await set.start()
    expect(signals[0].aborted).to.equal(false)
    await set.stop(namingLogger([]))
    expect(signals[0].aborted).to.equal(true)
  })

  it('when a start fails, stop reaches the failed component and those before it, not those after', async () => {
    const events: string[] = []
    const ok = (n: string): Factory<{}, Component> => () => ({ stop: () => { events.push(`stop ${n}`) } })
    const bad: Factory<{}, Component> = () => ({ start: () => { throw new Error('no') }, stop: () => { events.push('stop bad') } })
    const set = new ComponentSet([['a', ok('a')], ['bad', bad], ['c', ok('c')]], base(namingLogger([])))
    let failed = false
    await set.start().catch(() => { failed = true })
    expect(failed).to.equal(true)
    await set.stop(namingLogger([]))
    expect(events).to.deep.equal(['stop bad', 'stop a'])
  })
})

describe('node/component: runByDependencies (the network parts\' start)', () => {
  /** An entry that records its start and end and finishes when released. */
  const gate = (): { started: boolean, release: () => void, done: Promise<void> } => {
    let release = (): void => {}
    const done = new Promise<void>((resolve) => { release = resolve })
    return { started: false, release: () => { release() }, done }
  }
  const tick = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 5)) }

  it('starts the parts side by side: one that is slow holds back only those that name it', async () => {
    const g = { identity: gate(), consensus: gate(), nft: gate(), sync: gate() }
    const after: Record<string, string[]> = { consensus: ['identity', 'discovery'], sync: ['consensus'] }
    const all = runByDependencies(Object.keys(g).map((n) => [n, n] as const), (n) => after[n], async (name) => {
      const e = g[name as keyof typeof g]
      e.started = true
      await e.done
    })
    await tick()
    // identity and nft at once; consensus waits for identity (discovery is not among them), sync for consensus
    expect([g.identity.started, g.nft.started, g.consensus.started, g.sync.started]).to.deep.equal([true, true, false, false])
    g.identity.release()
    await tick()
    expect([g.consensus.started, g.sync.started]).to.deep.equal([true, false])
    g.consensus.release()
    await tick()
    expect(g.sync.started).to.equal(true)
    let finished = false
    void all.then(() => { finished = true })
    g.sync.release()
    await tick()
    // nft still running: not finished
    expect(finished).to.equal(false)
    g.nft.release()
    await all
  })

  it('a failure rejects, once the others under way settled; a part waiting on the failed one does not run', async () => {
    const ran: string[] = []
    const err = await runByDependencies([['a', 'a'], ['b', 'b'], ['c', 'c']], (n) => n === 'c' ? ['a'] : undefined, async (name) => {
      if (name === 'a') throw new Error('a failed')
      await tick()
      ran.push(name)
    }).then(() => undefined, (e: Error) => e)
    expect(err?.message).to.equal('a failed')
    expect(ran).to.deep.equal(['b'])
  })

  it('parts that wait on each other in a circle are refused, naming the circle', async () => {
    const err = await runByDependencies([['a', 'a'], ['b', 'b']], (n) => n === 'a' ? ['b'] : ['a'], async () => {}).then(() => undefined, (e: Error) => e)
    expect(err?.message).to.match(/circle: a → b → a/)
  })
})
