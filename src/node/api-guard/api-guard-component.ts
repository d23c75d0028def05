import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import type { GuardOptions } from '../../api/server/guard.js'
import { isLoopbackHost } from '../../config/node-options.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { writeFileDurable } from '../../util/durable-write.js'
import type { Component, Factory } from '../component/component.js'

/** The API token file of a node started with -apiAuth, in its working directory. */
export const API_COOKIE = 'api.cookie'

/** The browser guard in front of every HTTP listener (docs/security.md). */
export interface ApiGuardComponent extends Component {
  /** the guard's settings; set once the component has started */
  options: () => GuardOptions
}

/**
 * With `-apiAuth` a fresh random token is written to <workDir>/api.cookie (mode 0600) at each
 * start. An API bound to an address other than loopback is refused without it: other machines
 * would reach it with no secret at all.
 */
export const apiGuardComponent: Factory<{}, ApiGuardComponent> = ({ base }) => {
  const o = base.options
  let guard: GuardOptions | undefined
  return {
    options: () => {
      if (guard === undefined) throw new Error('the API guard is read before it started')
      return guard
    },
    start: async () => {
      if (!isLoopbackHost(o.apiHost) && !o.apiAuth) {
        throw new RbtError(ErrorCode.CONFIG, `the API would listen on ${o.apiHost}, reachable from other machines, without a token: start with -apiAuth (the token is written to ${join(o.workDir, API_COOKIE)}) or bind to 127.0.0.1`)
      }
      // the bind address itself is a name clients of a non-loopback node use
      const allowHosts = [...o.allowHosts, ...(isLoopbackHost(o.apiHost) || o.apiHost === '0.0.0.0' || o.apiHost === '::' ? [] : [o.apiHost.includes(':') ? `[${o.apiHost}]` : o.apiHost])]
      let token: string | undefined
      if (o.apiAuth) {
        token = randomBytes(32).toString('hex')
        const file = join(o.workDir, API_COOKIE)
        await writeFileDurable(file, token + '\n', { mode: 0o600 })
        base.log.info(`API token written to ${file} (send it as Authorization: Bearer <token>; the CLI reads RBTNODE_API_TOKEN or -apiToken)`)
      }
      guard = { allowHosts, corsOrigins: o.corsOrigins, ...(token !== undefined ? { token } : {}) }
    }
  }
}
