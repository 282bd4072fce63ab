package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.NumberedCall;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/** The README's snippet, compiled; {@link ReadmeSnippetTest} checks the README shows it as it is. */
final class ReadmeSnippet {
  private ReadmeSnippet() {}

  static BudgetReply host(BudgetScripts scripts, LongSupplier clock, String clientId, long seq, BudgetCall call,
      long[] doubtNumber) {
    // README:begin
    // one per budget, run on one thread of the host (an event loop); the host's own id towards Redis
    BudgetRelay relay = new BudgetRelay("payments-api", RelaySettings.defaults(), new SplittableRandom()::nextDouble);
    ClientSequence identity = new ClientSequence("relay-" + Long.toHexString(new SplittableRandom().nextLong()));

    // a client's call: its id, its report number, what it would have sent budget.lua (answer(...) also
    // takes the held items it carries and says the batch its counts went into, for the reply's tag)
    BudgetReply answer = relay.client(clientId, seq, call, clock.getAsLong());

    // the host's timer, every 10 ms: the relay's own budget.lua call, when one is due
    BudgetCall up = relay.upstreamCall(clock.getAsLong());
    if (up != null) {
      BudgetKeys keys = scripts.keys(up.name());
      // a call of unknown fate goes again with the number it went with (kept at its failure, below), and
      // either says what it closes and forwards: through=<batch> and the held items
      CallExtras extras = relay.upstreamExtras();
      NumberedCall sent = relay.resending() ? scripts.again(up, keys, identity, doubtNumber[0], extras)
          : scripts.numbered(up, keys, identity, List.of(), extras);
      sent.reply().orTimeout(1, TimeUnit.SECONDS).whenComplete((reply, error) -> { // back on the relay's thread
        long now = clock.getAsLong();
        if (error == null) {
          relay.upstreamReplied(up, reply, now);
        } else if (BudgetScripts.neverRun(error)) {
          relay.upstreamRefused(up, now); // refused unsent: its counts go with the next call
        } else {
          doubtNumber[0] = sent.number(); // timed out, or lost in flight: it may have been applied
          relay.upstreamInDoubt(up, now);
        }
      });
    }
    // README:end
    return answer;
  }
}
