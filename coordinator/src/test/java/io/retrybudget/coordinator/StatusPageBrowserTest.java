package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The status page in a real headless Chromium, on the real coordinator and a real Redis: a budget
 * exhausted by real permit traffic is shown exhausted, the filter keeps only exhausted budgets, the
 * detail view charts the window, and the page logs no error (console, uncaught, CSP, failed loads).
 * Screenshots go to {@code target/screenshots/} ({@code -Dscreenshots.dir=../docs} refreshes the
 * README's).
 */
@Timeout(60)
class StatusPageBrowserTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "browser-test-token";
  static Coordinator coordinator;
  static ApiClient api;
  static Chromium browser;

  @BeforeAll
  static void start() throws Exception {
    Path binary = Chromium.require();
    // a Redis timeout of 10 s: this test is about the page, and on a loaded machine (load 40) a
    // script call took over the default 1 s and the setup's PUT answered 503
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN,
        "COORDINATOR_REDIS_TIMEOUT_MS", "10000")));
    api = new ApiClient(coordinator.port(), TOKEN);
    browser = new Chromium(binary, 1200, 640);
  }

  @AfterAll
  static void stop() {
    if (browser != null) {
      browser.close();
    }
    if (api != null) {
      api.close();
    }
    if (coordinator != null) {
      coordinator.close();
    }
  }

  /**
   * Real traffic over HTTP: first attempts counted, then {@code permits} single permits asked for,
   * or (permits &lt; 0) asked for until one is refused. Admission is paced: with no floor the balance
   * refills only with first attempts, so a budget refused once stays exhausted.
   */
  /** "R of C available now, refills X/s": the paced balance, its cap and its refill rate as the page writes them. */
  static final java.util.regex.Pattern BALANCE =
      java.util.regex.Pattern.compile("(\\d+) of (\\d+) available now, refills [0-9.,]+/s");

  static void traffic(String name, String config, int requests, int permits) throws Exception {
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/" + name, config).status());
    assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/" + name + "/requests",
        "{\"count\": " + requests + "}").status());
    for (int i = 0; i < (permits < 0 ? 1_000 : permits); i++) {
      int status = api.write("acquireRetries", "POST", "/v1/budgets/" + name + "/retries", "{\"count\": 1}").status();
      if (permits < 0 && status == 429) {
        return;
      }
      assertEquals(200, status, name + ": permit " + i);
    }
    assertTrue(permits >= 0, name + " was never refused");
  }

  static JsonObject budget(String name) throws Exception {
    return api.get("getBudget", "/v1/budgets/" + name).json();
  }

  /**
   * A minute of a storm in a budget's window (60 s: ten buckets of 6 s, ending in the one filling
   * now), written straight into its ring as budget.lua packs it (lua/README.md, the window ring):
   * what a fleet would have left there, for the chart to show a storm's shape.
   */
  static void plantMinute(String name, long[] requests, long[] retries, long[] denied) {
    StringBuilder args = new StringBuilder();
    String script = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
        + "local bucket_ms = 6000 local cur = math.floor(now / bucket_ms) local slots = {} "
        + "for i = 0, 10 do slots[i] = struct.pack('<i8i8i8i8i8i8', 0, 0, 0, 0, 0, 0) end "
        + "for k = 0, 9 do local b = cur - 9 + k local g = tonumber(ARGV[2 + 3 * k]) "
        + "slots[b % 11] = struct.pack('<i8i8i8i8i8i8', b, tonumber(ARGV[1 + 3 * k]), g, tonumber(ARGV[3 + 3 * k]), 1, now) end "
        + "local parts = { struct.pack('<i8', bucket_ms) } for i = 0, 10 do parts[#parts + 1] = slots[i] end "
        + "redis.call('SET', KEYS[1], table.concat(parts)) return 1";
    java.util.List<String> argv = new java.util.ArrayList<>(java.util.List.of("EVAL", script, "1",
        new io.retrybudget.budget.redis.protocol.BudgetKeys(name).window()));
    for (int k = 0; k < 10; k++) {
      argv.add(Long.toString(requests[k]));
      argv.add(Long.toString(retries[k]));
      argv.add(Long.toString(denied[k]));
    }
    redis.server().call(argv.toArray(new String[0]));
  }

  @Test
  void showsExhaustedBudgetsFiltersThemAndChartsOne() throws Exception {
    // checkout: permits until one is refused (429), then it stays exhausted: no floor refills it
    // (60 s windows: nothing leaves them while the test runs, however slow the machine)
    traffic("checkout", "{\"ratio\": 0.1, \"window_seconds\": 60, \"min_retries_per_second\": 0}", 400, -1);
    assertEquals(429, api.write("acquireRetries", "POST", "/v1/budgets/checkout/retries", "{\"count\": 1}").status());
    traffic("search", "{\"ratio\": 0.2, \"window_seconds\": 60, \"min_retries_per_second\": 0}", 500, 3);
    // shadow: 10 first attempts at 5 % leave half a permit; a shadow ask is granted and counted as would-deny
    traffic("reports", "{\"ratio\": 0.05, \"window_seconds\": 60, \"min_retries_per_second\": 0, \"mode\": \"shadow\"}",
        10, 2);
    traffic("inventory", "{\"window_seconds\": 60, \"min_retries_per_second\": 1}", 1200, 4);
    // payments: a storm's minute, planted, then permits until one is refused (no floor: it stays so)
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/payments",
        "{\"ratio\": 0.1, \"window_seconds\": 60, \"min_retries_per_second\": 0}").status());
    // (the oldest bucket empty: it may leave the window before the page first reads it)
    long[] requests = {0, 1200, 1250, 1300, 1300, 1300, 1250, 1200, 1200, 0};
    plantMinute("payments", requests, new long[] {0, 8, 118, 126, 131, 129, 122, 117, 21, 0},
        new long[] {0, 0, 870, 1380, 1510, 1490, 1420, 1290, 190, 0});
    traffic("payments", "{\"ratio\": 0.1, \"window_seconds\": 60, \"min_retries_per_second\": 0}", 1, -1);
    JsonObject payments = budget("payments");
    assertTrue(payments.getBoolean("exhausted"), payments.encode());
    JsonObject checkoutNow = budget("checkout");
    assertTrue(checkoutNow.getBoolean("exhausted"), checkoutNow.encode());
    assertTrue(budget("reports").getBoolean("exhausted"), "shadow, would deny");
    assertFalse(budget("search").getBoolean("exhausted"));
    assertFalse(budget("inventory").getBoolean("exhausted"));
    String base = "http://127.0.0.1:" + coordinator.port();

    browser.navigate(base + "/");
    String rows = "Array.from(document.querySelectorAll('#budgets tbody tr'))";
    String states = rows + ".map(r => r.dataset.budget + '=' + r.dataset.state + '/' + r.dataset.mode).join(' ')";
    assertEquals("checkout=exhausted/enforce inventory=ok/enforce payments=exhausted/enforce reports=exhausted/shadow"
        + " search=ok/enforce", browser.await(rows + ".length === 5", states, 10_000));
    String checkout = "document.querySelector('#budgets tr[data-budget=\"checkout\"]')";
    String text = browser.await(checkout + " !== null", checkout + ".innerText", 1_000);
    // the paced balance against its cap and its refill rate, the window's allowance apart (the cap
    // and the rate follow the first attempts' rate, which falls as the test's traffic ages: not compared)
    assertTrue(text.contains("EXHAUSTED") && BALANCE.matcher(text).find() && text.startsWith("checkout")
        && text.contains(checkoutNow.getLong("retries") + " of 40 retries in 60 s") && text.contains("10 %"), text);
    java.util.regex.Matcher held = BALANCE.matcher(text);
    assertTrue(held.find() && held.group(1).equals("0"), text);
    String why = browser.await("true", checkout + ".querySelector('td[title]').title", 1_000);
    assertTrue(why.startsWith("No retry can be granted now") && why.contains("The window allows 40 retries in 60 s"), why);
    String reports = browser.await("true", "document.querySelector('#budgets tr[data-budget=\"reports\"]').innerText", 1_000);
    assertTrue(reports.contains("EXHAUSTED") && reports.contains("SHADOW: would deny, not enforced"), reports);
    String search = browser.await("true", "document.querySelector('#budgets tr[data-budget=\"search\"]').innerText", 1_000);
    assertTrue(!search.contains("EXHAUSTED") && search.contains("3 of 100 retries in 60 s"), search);
    // the bar: the balance against its cap as its label gives them, as the page writes it (toFixed(1))
    // and the browser gives it back; both read in one evaluation
    String searchRow = "document.querySelector('#budgets tr[data-budget=\"search\"]')";
    JsonArray bar = new JsonArray(browser.await("true", "[" + searchRow + ".querySelector('.bar-label').textContent, "
        + searchRow + ".querySelector('.bar .fill').style.width]", 1_000));
    java.util.regex.Matcher balance = BALANCE.matcher(bar.getString(0));
    assertTrue(balance.find() && Long.parseLong(balance.group(1)) >= 1, bar.encode());
    assertEquals(java.math.BigDecimal.valueOf(Long.parseLong(balance.group(1)) * 100.0 / Long.parseLong(balance.group(2)))
        .setScale(1, java.math.RoundingMode.HALF_UP).stripTrailingZeros().toPlainString() + "%", bar.getString(1),
        "the bar: the balance of its cap");
    assertEquals("0%", browser.await("true", checkout + ".querySelector('.bar .fill').style.width", 1_000));
    // each row's chart holds the counts of its window's buckets (all of this test's traffic is younger than 60 s)
    String spark = checkout + ".querySelector('svg.spark').dataset";
    assertEquals(new JsonArray().add("400").add(String.valueOf(checkoutNow.getLong("retries")))
        .add(String.valueOf(checkoutNow.getLong("denied"))), new JsonArray(browser.await("true",
        "[" + spark + ".requests, " + spark + ".retries, " + spark + ".denied]", 1_000)));
    String paymentsSpark = "document.querySelector('#budgets tr[data-budget=\"payments\"] svg.spark')";
    assertEquals(String.valueOf(java.util.Arrays.stream(requests).sum() + 1), browser.await(
        "Number(" + paymentsSpark + ".dataset.buckets) >= 10", paymentsSpark + ".dataset.requests", 1_000), "the planted minute");
    assertEquals("3", browser.await("true", paymentsSpark + ".querySelectorAll('polyline').length", 1_000),
        "one line a series: ten adjacent buckets");
    Path shots = Path.of(System.getProperty("screenshots.dir", "target/screenshots"));
    browser.screenshot(shots.resolve("status-page.png"));

    // a hostile name written straight into Redis's index reaches the page as text, never as markup
    String hostile = "<img src=x onerror=\"document.title='owned'\">";
    redis.server().call("ZADD", io.retrybudget.budget.redis.protocol.BudgetKeys.STANDALONE_INDEX, "99999999999999", hostile);
    String shown = browser.await("!document.getElementById('broken-section').hidden",
        "document.querySelector('#broken li').textContent", 10_000);
    assertTrue(shown.startsWith(hostile + ": "), shown);
    assertEquals("0 Retry budgets", browser.await("true", "document.querySelectorAll('img').length + ' ' + document.title", 1_000));

    // the filter: only the exhausted ones, asked of the API, and the address says so
    browser.eval("document.getElementById('only-exhausted').click()");
    assertEquals("checkout payments reports", browser.await(rows + ".length === 3",
        rows + ".map(r => r.dataset.budget).join(' ')", 10_000));
    assertEquals("?exhausted=true", browser.await("true", "location.search", 1_000));
    browser.navigate(base + "/?exhausted=true");
    assertEquals("checkout payments reports", browser.await(rows + ".length === 3 && document.getElementById('only-exhausted').checked",
        rows + ".map(r => r.dataset.budget).join(' ')", 10_000), "the filter survives a reload");

    // one budget: its state in words, its last 60 s, and the window bucket by bucket
    browser.eval("document.querySelector('#budgets tr[data-budget=\"checkout\"] a').click()");
    assertEquals("exhausted", browser.await("location.pathname === '/budgets/checkout'"
        + " && document.querySelectorAll('#chart polyline').length >= 3", "document.getElementById('d-state').dataset.state",
        10_000));
    assertEquals("400", browser.await("true", "document.getElementById('chart').dataset.requests", 1_000));
    String explained = browser.await("true", "document.getElementById('d-explain').textContent", 1_000);
    assertTrue(explained.startsWith("No retry can be granted now")
        && explained.matches(".*The paced balance holds 0 of at most \\d+ permits .*"), explained);
    JsonArray sums = new JsonArray(browser.await("true", "[1, 2, 3].map(c => Array.from(document.querySelectorAll("
        + "'#d-buckets tbody tr')).reduce((s, r) => s + Number(r.cells[c].textContent.replace(/,/g, '')), 0))", 1_000));
    JsonObject c = budget("checkout");
    assertEquals(new JsonArray().add(400).add(c.getLong("retries")).add(c.getLong("denied")), sums,
        "first attempts, retries, denied over the buckets");
    assertEquals(2, c.getLong("denied"), "the two refused asks");
    // the storm's minute, for the screenshot
    browser.navigate(base + "/budgets/payments");
    assertTrue(Integer.parseInt(browser.await("Number(document.getElementById('chart').dataset.buckets) >= 10",
        "document.getElementById('chart').dataset.buckets", 10_000)) >= 10);
    browser.send("Emulation.setDeviceMetricsOverride", new io.vertx.core.json.JsonObject().put("width", 1200)
        .put("height", 900).put("deviceScaleFactor", 1).put("mobile", false));
    browser.screenshot(shots.resolve("status-budget.png"));

    assertEquals("[]", browser.errors().toString(), "no console error, exception, CSP violation or failed load");
    assertTrue(Files.size(shots.resolve("status-page.png")) > 10_000, "a real screenshot");
  }
}
