package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// createCharge is the mutating create_charge tool (served with --charges): it charges an
// account and returns a chargeId minted by the server, which issue_refund accepts as chargeId.
// It takes the same arguments as issue_refund (without chargeId) and the same idempotency key.
func (s *service) createCharge(ctx context.Context, key string, m map[string]any) response {
	a, err := parseRefund(m, false)
	if err != nil {
		return problem(http.StatusBadRequest, "invalid_arguments", err.Error())
	}
	return s.idempotent(ctx, "create_charge", key, m, func() response {
		ctx, span := s.executeSpan(ctx, spanChargeExecute, key)
		defer span.End()
		c := charge{ChargeID: randomID("ch_"), AccountID: a.AccountID, Amount: a.Amount, Currency: a.Currency, Key: key}
		if s.cfg.Work > 0 {
			time.Sleep(s.cfg.Work)
		}
		c.CreatedAt = time.Now().UTC()
		if err := s.store.AddCharge(context.WithoutCancel(ctx), c); err != nil {
			return problem(http.StatusInternalServerError, "store_error", err.Error())
		}
		s.mu.Lock()
		s.stats.Executions++
		s.mu.Unlock()
		return jsonResponse(map[string]any{
			"chargeId": c.ChargeID, "accountId": c.AccountID, "amount": c.Amount, "currency": c.Currency, "status": "succeeded",
		})
	})
}

// checkCharge answers a client error when the refund names a charge that does not exist or
// belongs to another account; ok is true when the charge may be refunded.
func (s *service) checkCharge(ctx context.Context, a refundArgs) (response, bool) {
	c, err := s.store.Charge(ctx, a.ChargeID)
	if err != nil {
		return problem(http.StatusInternalServerError, "store_error", err.Error()), false
	}
	if c == nil {
		return problem(http.StatusBadRequest, "unknown_charge",
			fmt.Sprintf("no charge %q: pass the chargeId create_charge returned", a.ChargeID)), false
	}
	if c.AccountID != a.AccountID {
		return problem(http.StatusBadRequest, "charge_account_mismatch",
			fmt.Sprintf("charge %q belongs to account %q, not %q", a.ChargeID, c.AccountID, a.AccountID)), false
	}
	return response{}, true
}
