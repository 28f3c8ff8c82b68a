// A deterministic payment provider for tests and the demo: it records every charge and refund, and
// can be told to be slow, to hold charges until released, or to decline.
import { AnteroomError } from '../../core/errors.js'
import type { Charge, PaymentProvider } from '../../ports/payments.js'

export interface RecordedCharge {
  chargeId: string
  idempotencyKey: string
  amountCents: number
  holder: string
}

export class TestPaymentProvider implements PaymentProvider {
  readonly charges: RecordedCharge[] = []
  readonly refunds: string[] = []
  /** Every charge takes this long. */
  delayMs = 0
  /** The next n charges are declined. */
  declineNext = 0
  private readonly byKey = new Map<string, Charge>()
  private gate: Promise<void> | undefined
  private entered: (() => void) | undefined

  /**
   * Holds every charge until the returned release function is called. `reached` resolves when a
   * charge is waiting at the gate, so a test can act while a payment is in flight.
   */
  pause(): { release: () => void; reached: Promise<void> } {
    let release = () => {}
    this.gate = new Promise<void>((resolve) => {
      release = () => {
        this.gate = undefined
        resolve()
      }
    })
    const reached = new Promise<void>((resolve) => {
      this.entered = resolve
    })
    return { release, reached }
  }

  async charge(input: { idempotencyKey: string; amountCents: number; holder: string }): Promise<Charge> {
    if (this.gate) {
      this.entered?.()
      await this.gate
    }
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs))
    const seen = this.byKey.get(input.idempotencyKey)
    if (seen) return seen
    if (this.declineNext > 0) {
      this.declineNext--
      throw new AnteroomError('ERR_PAYMENT_DECLINED', 'The card was declined')
    }
    const charge = { chargeId: `ch_${String(this.charges.length + 1).padStart(6, '0')}` }
    this.byKey.set(input.idempotencyKey, charge)
    this.charges.push({ chargeId: charge.chargeId, ...input })
    return charge
  }

  async refund(chargeId: string): Promise<void> {
    if (!this.refunds.includes(chargeId)) this.refunds.push(chargeId)
  }
}
