// The PaymentProvider port: charges and refunds happen outside any database transaction.

export interface Charge {
  chargeId: string
}

export interface PaymentProvider {
  /** Charges once per idempotency key: a repeat returns the first charge. Throws when declined. */
  charge(input: { idempotencyKey: string; amountCents: number; holder: string }): Promise<Charge>
  /** Refunds a charge; refunding twice is a no-op. */
  refund(chargeId: string): Promise<void>
}
