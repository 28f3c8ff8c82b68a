-- 001_booking.sql: events, seats, holds, payments and tickets for the booking origin.
-- Migrations are only ever appended; each runs once, in a transaction, in file-name order.

CREATE TABLE events (
  id              text PRIMARY KEY,
  name            text    NOT NULL,
  -- The Anteroom room whose admission tokens may book this event.
  room            text    NOT NULL,
  price_cents     integer NOT NULL CHECK (price_cents >= 0),
  hold_seconds    integer NOT NULL DEFAULT 600 CHECK (hold_seconds > 0),
  max_per_visitor integer NOT NULL DEFAULT 4 CHECK (max_per_visitor > 0)
);

CREATE TABLE seats (
  event_id        text    NOT NULL REFERENCES events (id),
  seat            text    NOT NULL,
  row_label       text    NOT NULL,
  number          integer NOT NULL,
  status          text    NOT NULL DEFAULT 'free' CHECK (status IN ('free', 'held', 'sold')),
  holder          text,
  hold_id         uuid,
  -- A hold past this instant is free: every claim compares it with now(), no sweeper needed.
  hold_expires_at timestamptz,
  PRIMARY KEY (event_id, seat)
);
CREATE INDEX seats_holder ON seats (event_id, holder) WHERE holder IS NOT NULL;
CREATE INDEX seats_hold ON seats (hold_id) WHERE hold_id IS NOT NULL;

-- One row per visitor and event. Each claim locks it first, so one visitor's concurrent claims
-- run one after another and the per-visitor limit cannot be beaten by write skew.
CREATE TABLE visitors (
  event_id   text        NOT NULL REFERENCES events (id),
  holder     text        NOT NULL,
  touched_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, holder)
);

CREATE TABLE holds (
  id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  event_id   text        NOT NULL REFERENCES events (id),
  holder     text        NOT NULL,
  seats      text[]      NOT NULL,
  expires_at timestamptz NOT NULL,
  status     text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'released', 'confirmed')),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per checkout attempt, keyed by the client's Idempotency-Key.
CREATE TABLE payments (
  idempotency_key text        PRIMARY KEY,
  hold_id         uuid        NOT NULL REFERENCES holds (id),
  holder          text        NOT NULL,
  amount_cents    integer     NOT NULL,
  status          text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'confirmed', 'refunded', 'failed')),
  charge_id       text,
  -- The HTTP answer, replayed for every repeat of the key.
  response_status integer,
  response        jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The net beneath the claim: whatever happens above, a seat is ticketed once.
CREATE TABLE tickets (
  id          bigserial   PRIMARY KEY,
  event_id    text        NOT NULL REFERENCES events (id),
  seat        text        NOT NULL,
  holder      text        NOT NULL,
  hold_id     uuid        NOT NULL REFERENCES holds (id),
  payment_key text        NOT NULL REFERENCES payments (idempotency_key),
  issued_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (event_id, seat)
);
