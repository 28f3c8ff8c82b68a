// Every word the human check shows a visitor (its page, src/http/human-check.ts, and what its script
// says as it goes), in one place, so that they can be translated with the queue page's. The script
// holds no words of its own: the page hands it these in data-msg-* attributes.

export const HUMAN_CHECK_TEXT = {
  /** The page's <title> and headline. */
  title: 'Before you join the line',
  lead: 'Please confirm that you are a person. It takes a moment, and then you get your place in line.',
  noscript:
    'This waiting room needs JavaScript to check that you are a person and give you a place in line. Please turn JavaScript on and reload this page.',
  /** What the script says, by step (data-msg-<key>). */
  messages: {
    loading: 'Loading the check…',
    ready: '',
    checking: 'Checking…',
    done: 'Done. Taking you to your place in line…',
    again: 'That did not work. Please try the check again.',
    unavailable: 'We could not check your answer just now. Please try again in a moment.',
    offline: 'The waiting room did not answer; trying again shortly.',
    blocked: 'The check could not load. Please reload the page, and allow its script if something blocks it.',
  },
} as const

export type HumanCheckMessage = keyof typeof HUMAN_CHECK_TEXT.messages
