package io.retrybudget.deploy;

import static io.retrybudget.deploy.DeployFiles.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The alert rules: promtool's syntax check and unit tests, and the shape every alert must have. */
class AlertRulesTest {

  @Test
  void promtoolChecksTheRules() throws Exception {
    String out = Promtool.run(DeployFiles.path("prometheus"), Promtool.require("promtool").toString(),
        "check", "rules", "alerts.yml");
    assertTrue(out.contains("SUCCESS"), out);
  }

  @Test
  void promtoolUnitTestsEveryAlert() throws Exception {
    String out = Promtool.run(DeployFiles.path("prometheus"), Promtool.require("promtool").toString(),
        "test", "rules", "alerts_test.yml");
    assertTrue(out.contains("SUCCESS"), out);
    Set<String> tested = new HashSet<>();
    for (Object t : (List<?>) at(DeployFiles.yaml("prometheus/alerts_test.yml"), "tests")) {
      for (Object a : (List<?>) at(t, "alert_rule_test")) {
        if (!((List<?>) at(a, "exp_alerts")).isEmpty()) {
          tested.add(at(a, "alertname"));
        }
      }
    }
    assertEquals(alertNames(), tested, "every alert has a unit test in which it fires");
  }

  @Test
  void everyAlertHasForSeveritySummaryDescriptionAndARunbookSection() {
    String runbook = DeployFiles.text("RUNBOOK.md");
    for (Map<String, Object> rule : rules()) {
      String name = (String) rule.get("alert");
      assertTrue(rule.containsKey("for"), name + " has for");
      Map<String, Object> labels = at(rule, "labels");
      assertTrue(List.of("info", "warning", "critical").contains(labels.get("severity")), name);
      Map<String, Object> annotations = at(rule, "annotations");
      assertTrue(annotations.containsKey("summary") && annotations.containsKey("description"), name);
      String link = (String) annotations.get("runbook_url");
      assertEquals(runbookBaseUrl() + "#" + name.toLowerCase(), link);
      assertTrue(runbook.contains("\n## " + name + "\n"), "RUNBOOK.md has a section for " + name);
    }
  }

  /** The dashboard and the alerts name the budget by one label, {@code budget}, in every family. */
  @Test
  void everyQuerySelectsAndGroupsTheBudgetByTheBudgetLabel() {
    List<String> exprs = new java.util.ArrayList<>();
    java.util.regex.Matcher e = java.util.regex.Pattern.compile("\"expr\":\\s*\"((?:[^\"\\\\]|\\\\.)*)\"")
        .matcher(DeployFiles.text("grafana/dashboards/retry-budgets.json"));
    while (e.find()) {
      exprs.add(e.group(1).replace("\\\"", "\""));
    }
    assertTrue(exprs.size() >= 5, "the dashboard's queries: " + exprs);
    for (Map<String, Object> rule : rules()) {
      exprs.add((String) rule.get("expr"));
    }
    java.util.regex.Pattern nameLabel = java.util.regex.Pattern.compile("[{,(]\\s*name\\s*(=~|!~|!=|=|,|\\))");
    for (String expr : exprs) {
      assertFalse(nameLabel.matcher(expr).find(), "the budget label is `budget`, not `name`: " + expr);
      if (expr.contains("retry_")) {
        assertTrue(expr.contains("budget"), "names the budget: " + expr);
      }
    }
  }

  /** The absolute runbook base URL deploy/README.md documents (RUNBOOK_BASE_URL=...). */
  static String runbookBaseUrl() {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^\\s+RUNBOOK_BASE_URL=(\\S+)$")
        .matcher(DeployFiles.text("README.md"));
    assertTrue(m.find(), "deploy/README.md documents RUNBOOK_BASE_URL");
    java.net.URI base = java.net.URI.create(m.group(1));
    assertTrue(base.isAbsolute() && base.getScheme().startsWith("http") && base.getHost() != null
        && base.getFragment() == null, "an absolute http(s) URL without fragment: " + base);
    return m.group(1);
  }

  @Test
  void ratesOnlyOverCountersAndReplicasAggregated() {
    for (Map<String, Object> rule : rules()) {
      String expr = (String) rule.get("expr");
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("rate\\((\\w+)").matcher(expr);
      while (m.find()) {
        assertTrue(m.group(1).endsWith("_total") || m.group(1).endsWith("_bucket"), "rate over a counter: " + expr);
      }
      if (expr.contains("retry_budget_exhausted") || expr.contains("retry_budget_remaining")) {
        assertTrue(expr.contains("max by (budget)"), "coordinator gauges aggregated over replicas: " + expr);
      }
    }
  }

  static List<Map<String, Object>> rules() {
    return at(DeployFiles.yaml("prometheus/alerts.yml"), "groups", 0, "rules");
  }

  static Set<String> alertNames() {
    Set<String> names = new HashSet<>();
    for (Map<String, Object> r : rules()) {
      names.add((String) r.get("alert"));
    }
    return names;
  }
}
