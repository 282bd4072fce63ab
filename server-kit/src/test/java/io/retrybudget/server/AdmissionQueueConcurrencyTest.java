package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The queue under real threads and the real clock: four threads submit, release and cancel at
 * random while the queue's own timer drops what expires. Safety only, no timing: never more than
 * K permits held, every request told exactly once or cancelled while it waited (never both), and
 * the counters add up.
 */
class AdmissionQueueConcurrencyTest {
  @Test
  void underRacingThreadsNoMoreThanKRunAndEveryRequestIsDecidedOnce() throws Exception {
    int k = 3;
    AdmissionQueue q = AdmissionQueue.builder(QueueConfig.builder(k).maxQueue(8).shortTimeout(Duration.ofMillis(1))
        .longTimeout(Duration.ofMillis(5)).interval(Duration.ofMillis(3)).build()).build();
    AtomicInteger holding = new AtomicInteger();
    AtomicInteger mostHeld = new AtomicInteger();
    ConcurrentLinkedQueue<AdmissionQueue.Permit> held = new ConcurrentLinkedQueue<>();
    List<String> violations = new CopyOnWriteArrayList<>();
    record Sent(AdmissionQueue.Ticket ticket, AtomicInteger told, boolean[] cancelled) {}
    List<List<Sent>> all = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      List<Sent> mine = new ArrayList<>();
      all.add(mine);
      Random r = new Random(t);
      threads.add(new Thread(() -> {
        for (int i = 0; i < 3000; i++) {
          int op = r.nextInt(10);
          if (op < 5) {
            AtomicInteger told = new AtomicInteger();
            AdmissionQueue.Ticket ticket = q.submit(1 + r.nextInt(2), r.nextInt(4) == 0 ? -1 : r.nextInt(5), q.nanoTime(),
                new AdmissionQueue.Waiter() {
                  @Override
                  public void start(AdmissionQueue.Permit permit) {
                    told.incrementAndGet();
                    int now = holding.incrementAndGet();
                    mostHeld.accumulateAndGet(now, Math::max);
                    held.add(() -> {
                      holding.decrementAndGet(); // before the release: the next may start inside it
                      permit.release();
                    });
                  }

                  @Override
                  public void reject(AdmissionQueue.Rejection rejection) {
                    told.incrementAndGet();
                    if (rejection.answer().status() != 503 && rejection.answer().status() != 504) {
                      violations.add("answer " + rejection.answer().status());
                    }
                  }
                });
            mine.add(new Sent(ticket, told, new boolean[1]));
          } else if (op < 8) {
            AdmissionQueue.Permit p = held.poll();
            if (p != null) {
              p.release();
            }
          } else if (!mine.isEmpty()) {
            Sent s = mine.get(mine.size() - 1 - r.nextInt(Math.min(5, mine.size())));
            if (s.ticket().cancel()) {
              s.cancelled()[0] = true;
            }
          }
        }
      }));
    }
    threads.forEach(Thread::start);
    for (Thread t : threads) {
      t.join();
    }
    Eventually.await("every request decided", Duration.ofSeconds(30), () -> {
      for (AdmissionQueue.Permit p; (p = held.poll()) != null;) {
        p.release();
      }
      return q.queueLength() == 0 && q.running() == 0;
    });
    int sent = 0;
    int cancelled = 0;
    for (List<Sent> mine : all) {
      for (Sent s : mine) {
        sent++;
        cancelled += s.cancelled()[0] ? 1 : 0;
        int expected = s.cancelled()[0] ? 0 : 1;
        if (s.told().get() != expected) {
          violations.add("told " + s.told().get() + " times, cancelled " + s.cancelled()[0]);
        }
      }
    }
    assertEquals(List.of(), violations.subList(0, Math.min(5, violations.size())));
    assertTrue(mostHeld.get() <= k, "at most " + k + " held at once, seen " + mostHeld.get());
    AdmissionQueue.Stats st = q.stats();
    assertEquals(cancelled, st.cancelled());
    assertEquals(sent, st.startedFirst() + st.startedRetry() + st.droppedDeadline() + st.droppedCodel()
        + st.droppedFull() + st.cancelled(), st.toString());
    assertTrue(st.startedFirst() > 0 && st.droppedDeadline() > 0 && st.droppedFull() + st.droppedCodel() > 0, st.toString());
    q.close();
  }
}
