// flexzone console: the little the pages need beyond HTML.
//  - [data-refresh=MS]: re-fetch this page every MS and swap the element (same id) until the server
//    renders it without the attribute (an operation that ended, say).
//  - [data-expires=ISO]: a lease countdown, every second.
//  - #connect-form: the dry-run plan and the submit, as JSON to the API (the API checks roles, scopes
//    and that the request comes from this origin); then the operation's page follows it live.
//  - [data-reconcile]: check or repair, the same way.
// Everything the server sends back is put in the page as text (textContent), never as HTML.
"use strict";

(function () {
  function refreshLater(element, failures) {
    const every = parseInt(element.dataset.refresh, 10);
    if (!element.id || !(every > 0)) return;
    failures = failures || 0;
    // After a failure (the server restarting, say) wait longer each time, up to a minute.
    const wait = failures ? Math.min(60000, every * Math.pow(2, failures)) : every;
    window.setTimeout(function () {
      fetch(window.location.href, {credentials: "same-origin", headers: {"Accept": "text/html"}})
        .then(function (response) {
          if (response.status >= 400 && response.status < 500) {
            // Refused (a revoked certificate, a role taken away) or gone: asking again will not help.
            stale(element, "This page stopped updating: the service answered " + response.status +
              ". Reload to see why.");
            return null;
          }
          return response.ok ? response.text() : Promise.reject(response.status);
        })
        .then(function (html) {
          if (html === null) return;
          const fresh = new DOMParser().parseFromString(html, "text/html").getElementById(element.id);
          const current = document.getElementById(element.id);
          if (!fresh || !current) return;
          current.replaceWith(document.importNode(fresh, true));
          const swapped = document.getElementById(element.id);
          tick();
          if (swapped.dataset.refresh) refreshLater(swapped, 0);
        })
        .catch(function () { refreshLater(element, failures + 1); });
    }, wait);
  }

  function stale(element, text) {
    const note = document.createElement("p");
    note.className = "warning";
    note.textContent = text;
    element.before(note);
  }

  function countdown(seconds) {
    if (seconds <= 0) return "lease ran out";
    const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
    const m = Math.floor(seconds % 3600 / 60), s = Math.floor(seconds % 60);
    const parts = d ? [d + "d", h + "h"] : h ? [h + "h", m + "m"] : m ? [m + "m", s + "s"] : [s + "s"];
    return "lease " + parts.join(" ");
  }

  function tick() {
    const now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (element) {
      const expires = Date.parse(element.dataset.expires);
      if (!isNaN(expires)) element.textContent = countdown((expires - now) / 1000);
    });
  }

  function say(element, text) {
    element.textContent = text;
    element.hidden = !text;
  }

  function describeError(status, body) {
    if (body && typeof body === "object" && body.detail) {
      const fields = (body.errors || []).map(function (e) {
        return e.field + ": " + e.message + (e.suggestions && e.suggestions.length ? " (did you mean " +
          e.suggestions.join(", ") + "?)" : "");
      });
      return body.detail + (fields.length > 1 ? " — " + fields.join("; ") : "");
    }
    return "The service answered " + status + ".";
  }

  function call(method, url, body) {
    const options = {method: method, credentials: "same-origin", headers: {"Accept": "application/json"}};
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    return fetch(url, options).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (data) {
        return {ok: response.ok, status: response.status, data: data};
      });
    });
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function showPlan(plan) {
    const list = document.getElementById("plan-steps");
    list.replaceChildren();
    plan.steps.forEach(function (step) {
      const item = element("li");
      item.append(element("strong", "", step.action), " on router " + step.router + " (" + step.platform +
        ", site " + step.site + "): port " + step.port + ", zone " + step.zone + ", remote gateway " +
        step.remote_ip);
      if (step.delta) item.append(" ", element("span", "delta delta-" + step.delta, step.delta));
      if (step.initiators && step.initiators.length) {
        item.append(element("div", "members", "zone members: initiators " + step.initiators.join(", ") +
          "; target " + step.wwn));
      }
      if (step.commands.length) item.append(element("pre", "commands", step.commands.join("\n")));
      (step.notes || []).forEach(function (note) { item.append(element("div", "note", "note: " + note)); });
      list.append(item);
    });
    if (!plan.steps.length) list.append(element("li", "empty", "Nothing to do on any router."));
    document.getElementById("plan-output").hidden = false;
  }

  function connectForm(form) {
    const error = document.getElementById("form-error");
    const submit = document.getElementById("submit-button");

    function value(name) { return form.elements[name] ? form.elements[name].value : ""; }
    function action() { return form.querySelector("input[name=action]:checked").value; }
    function by() { return form.querySelector("input[name=by]:checked").value; }

    function target() {
      const data = {site: value("site")};
      if (by() === "zone") data.zone = parseInt(value("zone"), 10);
      else data.device_description = value("device_description");
      return data;
    }

    function request() {
      const data = target();
      if (action() === "connect") {
        const hosts = Array.from(form.elements.hosts.selectedOptions).map(function (o) { return o.value; });
        if (hosts.length) data.hosts = hosts;
        if (value("duration")) data.duration = Number(value("duration"));
      }
      return data;
    }

    function arrange() {
      form.querySelectorAll("[data-by]").forEach(function (node) { node.hidden = node.dataset.by !== by(); });
      form.querySelectorAll("[data-action]").forEach(function (node) { node.hidden = node.dataset.action !== action(); });
      const site = value("site");
      Array.from(form.elements.hosts.options).forEach(function (option) {
        option.hidden = option.dataset.site !== site;
        if (option.hidden) option.selected = false;
      });
      submit.textContent = action() === "connect" ? "Connect" : "Disconnect";
      document.getElementById("plan-output").hidden = true;
      say(error, "");
    }

    form.addEventListener("change", arrange);
    arrange();

    document.getElementById("plan-button").addEventListener("click", function () {
      const query = new URLSearchParams({action: action()});
      const data = request();
      Object.keys(data).forEach(function (key) {
        if (key === "duration") return;
        [].concat(data[key]).forEach(function (item) { query.append(key, item); });
      });
      say(error, "");
      call("GET", form.dataset.planUrl + "?" + query.toString()).then(function (answer) {
        if (answer.ok) showPlan(answer.data);
        else say(error, describeError(answer.status, answer.data));
      });
    });

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      submit.disabled = true;
      say(error, "");
      const url = action() === "connect" ? form.dataset.connectUrl : form.dataset.disconnectUrl;
      call("POST", url, request()).then(function (answer) {
        if (answer.ok && answer.data && answer.data.id) {
          window.location.assign("/operations/" + answer.data.id + "/");
          return;
        }
        submit.disabled = false;
        say(error, describeError(answer.status, answer.data));
      });
    });
  }

  function reconcileButtons() {
    const error = document.getElementById("form-error");
    document.querySelectorAll("[data-reconcile]").forEach(function (button) {
      button.addEventListener("click", function () {
        const repair = button.dataset.reconcile === "repair";
        const policy = document.getElementById("repair-policy");
        if (repair && !window.confirm("Repair changes " + (policy && policy.value === "router" ? "the registry" :
          "the routers") + " to match. Go ahead?")) return;
        button.disabled = true;
        const body = {repair: repair, policy: repair && policy ? policy.value : "registry"};
        call("POST", "/api/reconcile/", body).then(function (answer) {
          if (answer.ok && answer.data && answer.data.id) {
            window.location.assign("/operations/" + answer.data.id + "/");
            return;
          }
          button.disabled = false;
          say(error, describeError(answer.status, answer.data));
        });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-refresh]").forEach(function (element) { refreshLater(element, 0); });
    tick();
    window.setInterval(tick, 1000);
    const form = document.getElementById("connect-form");
    if (form) connectForm(form);
    reconcileButtons();
  });
})();
