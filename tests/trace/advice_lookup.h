#pragma once
// Looking things up in an Advice, for the tests of `pil-trace advise`: a finding by its cause,
// a symptom by its rule, a figure by its name, and whether a rule was clean or unable to run.
#include <gtest/gtest.h>

#include <string>

#include "trace/advise/advise.h"
#include "trace/parse.h"

namespace pil::test {

/// The advice on a trace given as JSON text.
inline trace::Advice advise_text(const std::string& json, const trace::AdviseOptions& o = {}) {
  const trace::Trace t = trace::parse_trace_text(json);
  const trace::TraceIndex index(t);
  return trace::advise(index, o);
}

/// The finding of cause `cause`, or null.
inline const trace::Finding* finding(const trace::Advice& a, const std::string& cause) {
  for (const trace::Finding& f : a.findings)
    if (f.cause == cause) return &f;
  return nullptr;
}
/// Not on a temporary Advice: the pointer would outlive it.
const trace::Finding* finding(const trace::Advice&& a, const std::string& cause) = delete;

/// The symptom rule `rule` reported, whatever finding it went under; null if none.
inline const trace::Symptom* symptom(const trace::Advice& a, const std::string& rule) {
  for (const trace::Finding& f : a.findings)
    for (const trace::Symptom& s : f.symptoms)
      if (s.rule == rule) return &s;
  return nullptr;
}
/// Not on a temporary Advice: the pointer would outlive it.
const trace::Symptom* symptom(const trace::Advice&& a, const std::string& rule) = delete;

/// Whether the advice has a finding of cause `cause` / a symptom of rule `rule` (on a temporary too).
inline bool has_finding(const trace::Advice& a, const std::string& cause) { return finding(a, cause) != nullptr; }
inline bool has_symptom(const trace::Advice& a, const std::string& rule) { return symptom(a, rule) != nullptr; }

/// True when rule `rule` ran and found nothing.
inline bool clean(const trace::Advice& a, const std::string& rule) {
  for (const trace::RuleNote& r : a.clean)
    if (r.rule == rule) return true;
  return false;
}

/// Why rule `rule` could not run; "" when it ran.
inline std::string unable(const trace::Advice& a, const std::string& rule) {
  for (const trace::RuleNote& r : a.unable)
    if (r.rule == rule) return r.why;
  return "";
}

/// The figure `name` of symptom `s` (a test failure, and -1, when it has none).
inline double figure(const trace::Symptom& s, const std::string& name) {
  for (const auto& [k, v] : s.figures)
    if (k == name) return v;
  ADD_FAILURE() << "no figure " << name << " in " << s.rule;
  return -1;
}

}  // namespace pil::test
