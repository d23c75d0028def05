import type { IdentityApi, SigningApi } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'

/** Identity and signing services for app tests that do not exercise them. */
export function unusedIdentity (): { identity: IdentityApi, signing: SigningApi } {
  const no = async (): Promise<never> => { throw new RbtError(ErrorCode.NOT_FOUND, 'identity not wired in this test') }
  return {
    identity: { create: no, setup: no, list: async () => [], register: no, signArbitrary: no, verifyArbitrary: no, publicInfo: no, resolve: no },
    signing: { complete: no, cancel: no }
  }
}
