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
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN)));
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
    JsonObject checkoutNow = budget("checkout");
    assertTrue(checkoutNow.getBoolean("exhausted"), checkoutNow.encode());
    assertTrue(budget("reports").getBoolean("exhausted"), "shadow, would deny");
    assertFalse(budget("search").getBoolean("exhausted"));
    assertFalse(budget("inventory").getBoolean("exhausted"));
    String base = "http://127.0.0.1:" + coordinator.port();

    browser.navigate(base + "/");
    String rows = "Array.from(document.querySelectorAll('#budgets tbody tr'))";
    String states = rows + ".map(r => r.dataset.budget + '=' + r.dataset.state + '/' + r.dataset.mode).join(' ')";
    assertEquals("checkout=exhausted/enforce inventory=ok/enforce reports=exhausted/shadow search=ok/enforce",
        browser.await(rows + ".length === 4", states, 10_000));
    String checkout = "document.querySelector('#budgets tr[data-budget=\"checkout\"]')";
    String text = browser.await(checkout + " !== null", checkout + ".innerText", 1_000);
    assertTrue(text.contains("EXHAUSTED") && text.contains(checkoutNow.getLong("retries") + " / 40 retries")
        && text.contains("10 %"), text);
    String reports = browser.await("true", "document.querySelector('#budgets tr[data-budget=\"reports\"]').innerText", 1_000);
    assertTrue(reports.contains("EXHAUSTED") && reports.contains("SHADOW: would deny, not enforced"), reports);
    String search = browser.await("true", "document.querySelector('#budgets tr[data-budget=\"search\"]').innerText", 1_000);
    assertTrue(!search.contains("EXHAUSTED") && search.contains("3 / 100 retries"), search);
    // as the page writes it (toFixed(1)) and the browser gives it back (no trailing ".0")
    assertEquals(java.math.BigDecimal.valueOf(checkoutNow.getLong("retries") * 100.0 / 40)
        .setScale(1, java.math.RoundingMode.HALF_UP).stripTrailingZeros().toPlainString() + "%",
        browser.await("true", checkout + ".querySelector('.bar .fill').style.width", 1_000), "the bar: retries of the allowance");
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
    assertEquals("checkout reports", browser.await(rows + ".length === 2",
        rows + ".map(r => r.dataset.budget).join(' ')", 10_000));
    assertEquals("?exhausted=true", browser.await("true", "location.search", 1_000));
    browser.navigate(base + "/?exhausted=true");
    assertEquals("checkout reports", browser.await(rows + ".length === 2 && document.getElementById('only-exhausted').checked",
        rows + ".map(r => r.dataset.budget).join(' ')", 10_000), "the filter survives a reload");

    // one budget: its state, and the window bucket by bucket (30 bars: 10 buckets x 3 series)
    browser.eval("document.querySelector('#budgets tr[data-budget=\"checkout\"] a').click()");
    assertEquals("exhausted", browser.await("location.pathname === '/budgets/checkout'"
        + " && document.querySelectorAll('#chart rect').length === 30", "document.getElementById('d-state').dataset.state",
        10_000));
    JsonArray sums = new JsonArray(browser.await("true", "[1, 2, 3].map(c => Array.from(document.querySelectorAll("
        + "'#d-buckets tbody tr')).reduce((s, r) => s + Number(r.cells[c].textContent.replace(/,/g, '')), 0))", 1_000));
    JsonObject c = budget("checkout");
    assertEquals(new JsonArray().add(400).add(c.getLong("retries")).add(c.getLong("denied")), sums,
        "first attempts, retries, denied over the buckets");
    assertEquals(2, c.getLong("denied"), "the two refused asks");
    browser.send("Emulation.setDeviceMetricsOverride", new io.vertx.core.json.JsonObject().put("width", 1200)
        .put("height", 760).put("deviceScaleFactor", 1).put("mobile", false));
    browser.screenshot(shots.resolve("status-budget.png"));

    assertEquals("[]", browser.errors().toString(), "no console error, exception, CSP violation or failed load");
    assertTrue(Files.size(shots.resolve("status-page.png")) > 10_000, "a real screenshot");
  }
}
