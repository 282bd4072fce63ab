package io.retrybudget.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.CoordinatorConfig;
import io.retrybudget.deploy.demo.LoadDemo;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus on loopback scrapes a real coordinator and a service instrumented with the SDK;
 * a storm exhausts a budget; the exhausted alert is seen firing through Prometheus's API (rules
 * copied with shorter durations), every metric the dashboard and alerts name is exported, and every
 * dashboard query returns data.
 */
class PrometheusEndToEndTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final String BUDGET = "storm-api";
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @Test
  void stormFiresTheExhaustedAlertAndEveryDashboardQueryReturnsData(@TempDir Path dir) throws Exception {
    Path prometheusBinary = Promtool.require("prometheus");
    try (Coordinator coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        // the Compose load demo itself, its payments dependency down from the start
        LoadDemo service = new LoadDemo(new LoadDemo.Settings(redis.uri(), "127.0.0.1", 0, 200, 0, 1, BUDGET))) {
      int promPort = RedisServerProcess.freePort();
      Path amBinary = Promtool.find("prometheus-alertmanager");
      int amPort = amBinary == null ? -1 : RedisServerProcess.freePort();
      Process alertmanager = amBinary == null ? null : new ProcessBuilder(amBinary.toString(),
          "--config.file=" + DeployFiles.path("alertmanager/alertmanager.yml"), "--storage.path=" + dir.resolve("am"),
          "--web.listen-address=127.0.0.1:" + amPort, "--cluster.listen-address=")
          .redirectErrorStream(true).redirectOutput(dir.resolve("alertmanager.log").toFile()).start();
      // scraped on the management listener, as deploy/prometheus/prometheus.yml does
      Path config = writePrometheusConfig(dir, coordinator.managementPort(), service.port(), amPort);
      Process prometheus = new ProcessBuilder(prometheusBinary.toString(), "--config.file=" + config,
          "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + promPort)
          .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
      try {
        String api = "http://127.0.0.1:" + promPort;
        Eventually.await("Prometheus ready", Duration.ofSeconds(30), () -> status(api + "/-/ready") == 200);
        assertEquals(200, put(coordinator.port(), "{\"ratio\": 0.1, \"min_retries_per_second\": 0, \"window_seconds\": 10}"));
        service.start();

        long start = System.nanoTime();
        Eventually.await("RetryBudgetExhausted firing for " + BUDGET, Duration.ofSeconds(120), () -> firing(api));
        System.out.printf("RetryBudgetExhausted fired %.1f s after the storm began%n", (System.nanoTime() - start) / 1e9);
        if (alertmanager != null) {
          String am = "http://127.0.0.1:" + amPort;
          Eventually.await("RetryBudgetExhausted for " + BUDGET + " received by Alertmanager (deploy/alertmanager)",
              Duration.ofSeconds(30), () -> answers(am + "/api/v2/alerts?filter=alertname%3D%22RetryBudgetExhausted%22",
                  "\"budget\":\"" + BUDGET + "\""));
          System.out.println("Alertmanager received RetryBudgetExhausted");
        } else {
          System.out.println("prometheus-alertmanager not on PATH: alert delivery not checked (.ci/run installs it)");
        }

        Map<String, String> queries = dashboardQueries();
        Set<String> metrics = metricNames(queries.values());
        metrics.addAll(metricNames(alertExpressions()));
        for (String metric : metrics) {
          Eventually.await(metric + " is exported", Duration.ofSeconds(30),
              () -> !query(api, "count({__name__=\"" + metric + "\"})").isEmpty());
        }
        System.out.println("metrics named by the dashboard and alerts, all exported: " + metrics);
        for (Map.Entry<String, String> q : queries.entrySet()) {
          Eventually.await("dashboard query returns data: " + q.getKey() + ": " + q.getValue(), Duration.ofSeconds(45),
              () -> !query(api, q.getValue()).isEmpty());
        }
        System.out.println(queries.size() + " dashboard queries returned data");
        for (String expr : alertExpressions()) {
          query(api, expr); // every alert expression evaluates (empty is fine while healthy)
        }
      } finally {
        prometheus.destroy();
        if (!prometheus.waitFor(10, TimeUnit.SECONDS)) {
          prometheus.destroyForcibly();
        }
        if (alertmanager != null) {
          alertmanager.destroy();
          if (!alertmanager.waitFor(10, TimeUnit.SECONDS)) {
            alertmanager.destroyForcibly();
          }
        }
      }
    }
  }

  /** The deploy/ scrape jobs and rules, pointed at this test's processes, with short durations. */
  private Path writePrometheusConfig(Path dir, int coordinatorPort, int servicePort, int alertmanagerPort) throws IOException {
    String rules = DeployFiles.text("prometheus/alerts.yml")
        .replaceAll("for: \\d+m", "for: 5s")
        .replace("[1m]", "[5s]");
    Files.writeString(dir.resolve("alerts.yml"), rules);
    String yml = """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files:
          - %s
        %s
        scrape_configs:
          - job_name: retry-budget-coordinator
            metrics_path: /metrics
            static_configs:
              - targets: ["127.0.0.1:%d"]
          - job_name: retry-budget-clients
            metrics_path: /metrics
            static_configs:
              - targets: ["127.0.0.1:%d"]
        """.formatted(dir.resolve("alerts.yml"), alertmanagerPort < 0 ? ""
            : "alerting: {alertmanagers: [{static_configs: [{targets: [\"127.0.0.1:" + alertmanagerPort + "\"]}]}]}",
            coordinatorPort, servicePort);
    Path config = dir.resolve("prometheus.yml");
    Files.writeString(config, yml);
    return config;
  }

  private boolean firing(String api) {
    try {
      JsonArray alerts = new JsonObject(get(api + "/api/v1/alerts")).getJsonObject("data").getJsonArray("alerts");
      for (int i = 0; i < alerts.size(); i++) {
        JsonObject a = alerts.getJsonObject(i);
        JsonObject labels = a.getJsonObject("labels");
        if ("RetryBudgetExhausted".equals(labels.getString("alertname")) && BUDGET.equals(labels.getString("budget"))
            && "firing".equals(a.getString("state"))) {
          return true;
        }
      }
      return false;
    } catch (Exception e) {
      return false;
    }
  }

  /** Every panel target, with the dashboard's variables filled in. */
  static Map<String, String> dashboardQueries() {
    JsonObject dash = new JsonObject(DeployFiles.text("grafana/dashboards/retry-budgets.json"));
    Map<String, String> out = new LinkedHashMap<>();
    JsonArray panels = dash.getJsonArray("panels");
    for (int i = 0; i < panels.size(); i++) {
      JsonObject p = panels.getJsonObject(i);
      JsonArray targets = p.getJsonArray("targets");
      for (int j = 0; j < targets.size(); j++) {
        String expr = targets.getJsonObject(j).getString("expr")
            .replace("$budget", BUDGET).replace("$__rate_interval", "15s");
        out.put(p.getString("title") + " / " + targets.getJsonObject(j).getString("refId"), expr);
      }
    }
    return out;
  }

  static List<String> alertExpressions() {
    List<String> out = new ArrayList<>();
    for (Map<String, Object> r : AlertRulesTest.rules()) {
      out.add((String) r.get("expr"));
    }
    return out;
  }

  private static final Pattern METRIC = Pattern.compile("\\b((?:retry|vertx)_[a-z_]+|up)\\b(?=\\s*[{\\[)])");

  static Set<String> metricNames(java.util.Collection<String> exprs) {
    Set<String> names = new LinkedHashSet<>();
    for (String e : exprs) {
      Matcher m = METRIC.matcher(e);
      while (m.find()) {
        names.add(m.group(1));
      }
    }
    return names;
  }

  private JsonArray query(String api, String promql) {
    try {
      JsonObject r = new JsonObject(get(api + "/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)));
      if (!"success".equals(r.getString("status"))) {
        throw new AssertionError(promql + ": " + r);
      }
      return r.getJsonObject("data").getJsonArray("result");
    } catch (IOException | InterruptedException e) {
      return new JsonArray();
    }
  }

  private String get(String url) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }

  private boolean answers(String url, String excerpt) {
    try {
      return get(url).contains(excerpt);
    } catch (IOException | InterruptedException e) {
      return false;
    }
  }

  private int status(String url) {
    try {
      return http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    } catch (Exception e) {
      return -1;
    }
  }

  private int put(int port, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/budgets/" + BUDGET))
        .header("Authorization", "Bearer t").header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode();
  }
}
