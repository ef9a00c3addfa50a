-- Contracts and invoicing (docs/billing.md). Amounts are exact decimals (numeric), never floating point; the service
-- rounds each line once to the currency's minor unit, half to even, and stores the rounded figures.

-- The partner's name, address, logo and tax id as its invoices show them.
CREATE TABLE billing_profiles (
  partner_id  uuid PRIMARY KEY REFERENCES partners (id),
  name        varchar(255),
  address     varchar(2000),
  -- A data: URL of a PNG or JPEG image.
  logo        text,
  tax_id      varchar(64),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE TABLE contracts (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id              uuid NOT NULL REFERENCES organizations (id),
  partner_id          uuid NOT NULL REFERENCES partners (id),
  currency            char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  status              varchar(16) NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'cancelled', 'ended')),
  start_date          date NOT NULL,
  -- The last day the contract covers, inclusive.
  end_date            date CHECK (end_date >= start_date),
  interval_months     smallint NOT NULL CHECK (interval_months IN (1, 3, 12)),
  billing             varchar(8) NOT NULL CHECK (billing IN ('advance', 'arrears')),
  timezone            varchar(64) NOT NULL,
  payment_terms_days  integer NOT NULL CHECK (payment_terms_days BETWEEN 0 AND 365),
  auto_renew          boolean NOT NULL,
  auto_issue          boolean NOT NULL,
  tax_rate_percent    numeric(7, 4) NOT NULL CHECK (tax_rate_percent >= 0 AND tax_rate_percent <= 100),
  -- The start of the next period the daily run bills, and the day (in the billing time zone) it falls due: the
  -- period's start when billing in advance, the day after its end in arrears. Null once no period is left.
  next_period_start   date,
  next_due_on         date,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, org_id)
);
--> statement-breakpoint
CREATE INDEX contracts_org_idx ON contracts (org_id, created_at);
--> statement-breakpoint
-- The daily run reads only this index when nothing is due.
CREATE INDEX contracts_due_idx ON contracts (next_due_on) WHERE status IN ('active', 'cancelled');
--> statement-breakpoint
CREATE TABLE contract_lines (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  contract_id        uuid NOT NULL REFERENCES contracts (id) ON DELETE CASCADE,
  position           integer NOT NULL,
  type               varchar(20) NOT NULL CHECK (type IN ('flat', 'per-device', 'per-device-role', 'included-overage', 'manual')),
  description        varchar(500) NOT NULL,
  amount             numeric(18, 6),
  unit_price         numeric(18, 6),
  included_quantity  integer CHECK (included_quantity >= 0),
  group_id           uuid,
  site_id            uuid,
  os_type            varchar(50),
  role               varchar(16) CHECK (role IN ('workstation', 'server')),
  taxable            boolean NOT NULL,
  -- A replaced line is kept (invoices name it as their source) but no longer billed.
  retired_at         timestamptz,
  UNIQUE (contract_id, id)
);
--> statement-breakpoint
CREATE INDEX contract_lines_contract_idx ON contract_lines (contract_id, position) WHERE retired_at IS NULL;
--> statement-breakpoint
-- Days a contract was paused, in its billing time zone: from paused_on (inclusive) to resumed_on (exclusive).
CREATE TABLE contract_pauses (
  contract_id  uuid NOT NULL REFERENCES contracts (id) ON DELETE CASCADE,
  paused_on    date NOT NULL,
  resumed_on   date CHECK (resumed_on >= paused_on),
  PRIMARY KEY (contract_id, paused_on)
);
--> statement-breakpoint
CREATE TABLE invoices (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  contract_id          uuid NOT NULL REFERENCES contracts (id),
  org_id               uuid NOT NULL REFERENCES organizations (id),
  partner_id           uuid NOT NULL REFERENCES partners (id),
  kind                 varchar(8) NOT NULL CHECK (kind IN ('invoice', 'credit')),
  status               varchar(8) NOT NULL CHECK (status IN ('draft', 'issued', 'void')),
  -- The period billed: period_end is the day after its last day.
  period_start         date NOT NULL,
  period_end           date NOT NULL CHECK (period_end > period_start),
  currency             char(3) NOT NULL,
  subtotal             numeric(18, 6) NOT NULL,
  tax                  numeric(18, 6) NOT NULL,
  total                numeric(18, 6) NOT NULL,
  lines                jsonb NOT NULL,
  -- The usage statement the lines were computed from, with the organization's audit chain head at generation.
  usage                jsonb NOT NULL,
  chain_head_seq       bigint,
  chain_head_checksum  varchar(128),
  number               varchar(16),
  issued_at            timestamptz,
  issue_date           date,
  due_date             date,
  -- A credit note names the invoice it cancels.
  credits_invoice_id   uuid REFERENCES invoices (id),
  void_reason          varchar(1000),
  voided_at            timestamptz,
  generated_at         timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'draft') = (number IS NULL) OR status = 'void'),
  UNIQUE (partner_id, number)
);
--> statement-breakpoint
-- A period is claimed once: one live invoice per contract and period (a void one frees it for a replacement).
CREATE UNIQUE INDEX invoices_period_key ON invoices (contract_id, period_start) WHERE kind = 'invoice' AND status <> 'void';
--> statement-breakpoint
CREATE UNIQUE INDEX invoices_credit_key ON invoices (credits_invoice_id) WHERE kind = 'credit';
--> statement-breakpoint
CREATE INDEX invoices_org_idx ON invoices (org_id, period_start DESC);
--> statement-breakpoint
CREATE INDEX invoices_partner_idx ON invoices (partner_id, issue_date);
--> statement-breakpoint
-- Invoice numbers run without gaps per partner and year: the issuing transaction locks this row and takes the next.
CREATE TABLE invoice_counters (
  partner_id   uuid NOT NULL REFERENCES partners (id),
  year         integer NOT NULL,
  last_number  integer NOT NULL,
  PRIMARY KEY (partner_id, year)
);
--> statement-breakpoint
-- A period's usage reads the organization's devices enrolled before its end, deleted ones included (the hierarchy's
-- own indexes hold live devices only), and each one's device.create and device.delete audit rows.
CREATE INDEX devices_org_enrolled_idx ON devices (org_id, created_at);
--> statement-breakpoint
CREATE INDEX audit_entries_device_lifecycle_idx ON audit_entries (org_id, resource_id)
  WHERE action IN ('device.create', 'device.delete');
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON billing_profiles, contracts, contract_lines, invoices, invoice_counters TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON contract_pauses TO logbook_app;
