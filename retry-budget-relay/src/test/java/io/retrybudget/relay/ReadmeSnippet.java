package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/** The README's snippet, compiled; {@link ReadmeSnippetTest} checks the README shows it as it is. */
final class ReadmeSnippet {
  private ReadmeSnippet() {}

  static BudgetReply host(BudgetScripts scripts, LongSupplier clock, String clientId, long seq, BudgetCall call) {
    // README:begin
    // one per budget, run on one thread of the host (an event loop); the host's own id towards Redis
    BudgetRelay relay = new BudgetRelay("payments-api", RelaySettings.defaults(), new SplittableRandom()::nextDouble);
    ClientSequence identity = new ClientSequence("relay-" + Long.toHexString(new SplittableRandom().nextLong()));

    // a client's call: its id, its report number, what it would have sent budget.lua
    BudgetReply answer = relay.client(clientId, seq, call, clock.getAsLong());

    // the host's timer, every 10 ms: the relay's own budget.lua call, when one is due
    BudgetCall up = relay.upstreamCall(clock.getAsLong());
    if (up != null) {
      scripts.budget(up, identity).whenComplete((reply, error) -> { // back on the relay's thread
        if (error != null) {
          relay.upstreamFailed(up, clock.getAsLong());
        } else {
          relay.upstreamReplied(up, reply, clock.getAsLong());
        }
      });
    }
    // README:end
    return answer;
  }
}
