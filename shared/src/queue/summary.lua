-- Summary: {waiting, active, rate}.
return {redis.call('ZCARD', WAITING), live_active_count(), rate()}
