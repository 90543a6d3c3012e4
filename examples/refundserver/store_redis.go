package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStore reserves a key with SET NX PX (the lease) and replaces or deletes it only through
// Lua scripts that first check the reservation token, so a check and its write are one step.
type redisStore struct {
	c      *redis.Client
	prefix string
}

func newRedisStore(ctx context.Context, addr, prefix string) (*redisStore, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to redis at %s: %w", addr, err)
	}
	return &redisStore{c: c, prefix: prefix}, nil
}

func (s *redisStore) k(key string) string { return s.prefix + "key:" + key }

func (s *redisStore) Reserve(ctx context.Context, key string, rec record, lease time.Duration) (*record, error) {
	ctx = context.WithoutCancel(ctx) // see sqlStore: a write that ran is reported as done
	val, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return claim(ctx, key, func() (bool, error) { return s.c.SetNX(ctx, s.k(key), val, lease).Result() }, s.Get)
}

// completeScript swaps an in-flight record for the stored response if the token still matches.
var completeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local rec = cjson.decode(cur)
if rec.done or rec.token ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`)

// releaseScript deletes an in-flight record if the token still matches.
var releaseScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local rec = cjson.decode(cur)
if rec.done or rec.token ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])`)

func (s *redisStore) Complete(ctx context.Context, key string, rec record, ttl time.Duration) error {
	ctx = context.WithoutCancel(ctx) // see sqlStore: a write that ran is reported as done
	token := rec.Token
	rec.Token = ""
	val, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	n, err := completeScript.Run(ctx, s.c, []string{s.k(key)}, token, val, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("complete key: %w", err)
	}
	if n == 0 {
		return errNotOwner
	}
	return nil
}

func (s *redisStore) Release(ctx context.Context, key, token string) error {
	ctx = context.WithoutCancel(ctx) // see sqlStore: a write that ran is reported as done
	if err := releaseScript.Run(ctx, s.c, []string{s.k(key)}, token).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("release key: %w", err)
	}
	return nil
}

func (s *redisStore) Get(ctx context.Context, key string) (*record, error) {
	b, err := s.c.Get(ctx, s.k(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("decode key record: %w", err)
	}
	return &rec, nil
}

func (s *redisStore) Put(ctx context.Context, key string, rec record, ttl time.Duration) error {
	ctx = context.WithoutCancel(ctx) // see sqlStore: a write that ran is reported as done
	val, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.c.Set(ctx, s.k(key), val, ttl).Err()
}

func (s *redisStore) AddRefund(ctx context.Context, r refund) error {
	ctx = context.WithoutCancel(ctx) // see sqlStore: a write that ran is reported as done
	val, err := json.Marshal(r)
	if err != nil {
		return err
	}
	pipe := s.c.TxPipeline()
	pipe.RPush(ctx, s.prefix+"refunds", val)
	pipe.RPush(ctx, s.prefix+"refunds:"+r.AccountID, val)
	_, err = pipe.Exec(ctx)
	return err
}

func (s *redisStore) Refunds(ctx context.Context, accountID string) ([]refund, error) {
	list := s.prefix + "refunds"
	if accountID != "" {
		list += ":" + accountID
	}
	vals, err := s.c.LRange(ctx, list, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list refunds: %w", err)
	}
	out := make([]refund, 0, len(vals))
	for _, v := range vals {
		var r refund
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, fmt.Errorf("decode refund: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *redisStore) AddCharge(ctx context.Context, c charge) error {
	ctx = context.WithoutCancel(ctx) // see sqlStore: a write that ran is reported as done
	val, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.c.Set(ctx, s.prefix+"charge:"+c.ChargeID, val, 0).Err()
}

func (s *redisStore) Charge(ctx context.Context, id string) (*charge, error) {
	b, err := s.c.Get(ctx, s.prefix+"charge:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read charge: %w", err)
	}
	var c charge
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("decode charge: %w", err)
	}
	return &c, nil
}

func (s *redisStore) Close() error { return s.c.Close() }
