import { describeSecpBackend } from '../../wallet/secp-backend.js'
import type { Component, Factory } from '../component/component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'
import { TwoStepEngine } from './two-step.js'

/** Every signing operation's two-step flow (docs/architecture.md, "Identity"). */
export interface SigningComponent extends Component {
  signing: TwoStepEngine
}

export const signingComponent: Factory<{ metrics: MetricsComponent }, SigningComponent> = ({ base, metrics }) => {
  const signing = new TwoStepEngine({ logger: base.log })
  metrics.metrics.setSources({ pendingSignatures: () => signing.size })
  return {
    signing,
    // which secp256k1 implementation signs and verifies (libsecp256k1 or noble; decisions/0008)
    start: () => { base.log.info(describeSecpBackend()) },
    stop: () => { signing.stop() }
  }
}
