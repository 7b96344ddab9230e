/*
 * A C program that links libhwwfc_capi.a and checks its schedules against
 * the Rust core's.
 *
 *   schedule_check DIR
 *
 * DIR holds, for each case NAME listed in DIR/cases.txt (one per line):
 *   NAME.spec, NAME.model, NAME.coefficients   inputs, in the wire format
 *   NAME.wfc, NAME.exact                       the schedules Rust computed
 * The program schedules each case with both solvers through
 * hwwfc_schedule and hwwfc_schedule_compact and compares the bytes, checks
 * that the built-in encoders give the input files' bytes, and exercises
 * the error codes. It prints one line per check and exits 0 if all pass.
 */

#include "hwwfc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what, const char *name) {
    printf("%s %s %s\n", ok ? "ok  " : "FAIL", what, name);
    if (!ok) {
        failures++;
    }
}

static size_t read_file(const char *dir, const char *name, const char *ext, uint8_t *buf, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

typedef int32_t (*schedule_fn)(const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t, uint32_t,
                               uint8_t *, size_t, size_t *);

static void check_case(const char *dir, const char *name) {
    static uint8_t spec[HWWFC_SPEC_MAX_LEN], model[HWWFC_MODEL_MAX_LEN], coefficients[HWWFC_COEFFICIENTS_MAX_LEN];
    static uint8_t expected[HWWFC_SCHEDULE_MAX_LEN], out[HWWFC_SCHEDULE_MAX_LEN];
    size_t spec_len = read_file(dir, name, "spec", spec, sizeof spec);
    size_t model_len = read_file(dir, name, "model", model, sizeof model);
    size_t coefficients_len = read_file(dir, name, "coefficients", coefficients, sizeof coefficients);
    const struct {
        uint32_t solver;
        const char *ext;
    } solvers[] = {{HWWFC_SOLVER_WFC, "wfc"}, {HWWFC_SOLVER_EXACT, "exact"}};
    const struct {
        schedule_fn f;
        const char *what;
    } entries[] = {{hwwfc_schedule, "hwwfc_schedule"}, {hwwfc_schedule_compact, "hwwfc_schedule_compact"}};
    for (size_t s = 0; s < 2; s++) {
        size_t expected_len = read_file(dir, name, solvers[s].ext, expected, sizeof expected);
        for (size_t e = 0; e < 2; e++) {
            size_t len = 0;
            int32_t status = entries[e].f(spec, spec_len, model, model_len, coefficients, coefficients_len,
                                          solvers[s].solver, out, sizeof out, &len);
            if (status != HWWFC_OK) {
                printf("     %s: %s\n", entries[e].what, hwwfc_status_name(status));
            }
            char what[128];
            snprintf(what, sizeof what, "%s %-5s equals Rust's", entries[e].what, solvers[s].ext);
            check(status == HWWFC_OK && len == expected_len && memcmp(out, expected, len) == 0, what, name);
        }
        /* The default coefficients, given as NULL, give the same bytes. */
        size_t len = 0;
        int32_t status = hwwfc_schedule(spec, spec_len, model, model_len, NULL, 0, solvers[s].solver, out,
                                        sizeof out, &len);
        check(status == HWWFC_OK && len == expected_len && memcmp(out, expected, len) == 0,
              "NULL coefficients are the defaults", name);
    }
}

static void check_builtins(const char *dir) {
    static uint8_t a[HWWFC_MODEL_MAX_LEN], b[HWWFC_MODEL_MAX_LEN];
    size_t len = 0;
    check(hwwfc_builtin_model("attention", 0, a, sizeof a, &len) == HWWFC_OK &&
              len == read_file(dir, "attention.stress_gpu", "model", b, sizeof b) && memcmp(a, b, len) == 0,
          "hwwfc_builtin_model equals Rust's", "attention");
    check(hwwfc_builtin_spec("toy_gpu", a, sizeof a, &len) == HWWFC_OK &&
              len == read_file(dir, "attention.toy_gpu", "spec", b, sizeof b) && memcmp(a, b, len) == 0,
          "hwwfc_builtin_spec equals Rust's", "toy_gpu");
    check(hwwfc_default_coefficients(a, sizeof a, &len) == HWWFC_OK &&
              len == read_file(dir, "attention.toy_gpu", "coefficients", b, sizeof b) && memcmp(a, b, len) == 0,
          "hwwfc_default_coefficients equals Rust's", "default");
    check(a[0] == hwwfc_wire_version(), "the first byte is the wire version", "default");
    check(len > 2 && a[2] == hwwfc_cost_model_version(), "the third byte is the cost model's version", "default");
}

static void check_errors(void) {
    static uint8_t spec[HWWFC_SPEC_MAX_LEN], model[HWWFC_MODEL_MAX_LEN], out[HWWFC_SCHEDULE_MAX_LEN];
    size_t spec_len = 0, model_len = 0, len = 0;
    hwwfc_builtin_spec("stress_gpu", spec, sizeof spec, &spec_len);
    hwwfc_builtin_model("attention", 0, model, sizeof model, &model_len);
    int32_t s;

    s = hwwfc_schedule(spec, spec_len, model, model_len, NULL, 0, HWWFC_SOLVER_WFC, out, 8, &len);
    check(s == HWWFC_ERR_BUFFER_TOO_SMALL && len > 8 && len <= HWWFC_SCHEDULE_MAX_LEN, "a small buffer",
          "BUFFER_TOO_SMALL");
    s = hwwfc_schedule(NULL, spec_len, model, model_len, NULL, 0, HWWFC_SOLVER_WFC, out, sizeof out, &len);
    check(s == HWWFC_ERR_NULL_POINTER, "a null spec", "NULL_POINTER");
    s = hwwfc_schedule(spec, spec_len, model, model_len, NULL, 0, HWWFC_SOLVER_WFC, out, sizeof out, NULL);
    check(s == HWWFC_ERR_NULL_POINTER, "a null out_len", "NULL_POINTER");
    s = hwwfc_schedule(model, model_len, model, model_len, NULL, 0, HWWFC_SOLVER_WFC, out, sizeof out, &len);
    check(s == HWWFC_ERR_SPEC_BYTES, "a model given as the spec", "SPEC_BYTES");
    s = hwwfc_schedule(spec, spec_len, model, model_len - 1, NULL, 0, HWWFC_SOLVER_WFC, out, sizeof out, &len);
    check(s == HWWFC_ERR_MODEL_BYTES, "a truncated model", "MODEL_BYTES");
    s = hwwfc_schedule(spec, spec_len, model, model_len, spec, spec_len, HWWFC_SOLVER_WFC, out, sizeof out, &len);
    check(s == HWWFC_ERR_COEFFICIENT_BYTES, "a spec given as the coefficients", "COEFFICIENT_BYTES");
    static uint8_t coefficients[HWWFC_COEFFICIENTS_MAX_LEN];
    size_t coefficients_len = 0;
    hwwfc_default_coefficients(coefficients, sizeof coefficients, &coefficients_len);
    coefficients[2] = (uint8_t)(hwwfc_cost_model_version() - 1);
    s = hwwfc_schedule(spec, spec_len, model, model_len, coefficients, coefficients_len, HWWFC_SOLVER_WFC, out,
                       sizeof out, &len);
    check(s == HWWFC_ERR_COST_MODEL_VERSION, "coefficients of the previous cost model", "COST_MODEL_VERSION");
    coefficients[2] = hwwfc_cost_model_version();
    coefficients[0] = 1;
    s = hwwfc_schedule(spec, spec_len, model, model_len, coefficients, coefficients_len, HWWFC_SOLVER_WFC, out,
                       sizeof out, &len);
    check(s == HWWFC_ERR_COEFFICIENT_BYTES, "coefficients of wire format version 1", "COEFFICIENT_BYTES");
    check(strcmp(hwwfc_status_name(HWWFC_ERR_COST_MODEL_VERSION), "HWWFC_ERR_COST_MODEL_VERSION") == 0,
          "status names", "COST_MODEL_VERSION");
    s = hwwfc_schedule(spec, spec_len, model, model_len, NULL, 0, 7, out, sizeof out, &len);
    check(s == HWWFC_ERR_UNKNOWN_SOLVER, "solver 7", "UNKNOWN_SOLVER");
    check(hwwfc_builtin_model("resnet", 0, model, sizeof model, &len) == HWWFC_ERR_UNKNOWN_NAME, "model resnet",
          "UNKNOWN_NAME");
    check(strcmp(hwwfc_status_name(HWWFC_ERR_INFEASIBLE), "HWWFC_ERR_INFEASIBLE") == 0, "status names",
          "INFEASIBLE");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char path[1024], name[256];
    snprintf(path, sizeof path, "%s/cases.txt", argv[1]);
    FILE *cases = fopen(path, "r");
    if (!cases) {
        fprintf(stderr, "cannot open %s\n", path);
        return 2;
    }
    int count = 0;
    while (fscanf(cases, "%255s", name) == 1) {
        check_case(argv[1], name);
        count++;
    }
    fclose(cases);
    check(count > 0, "cases read", path);
    check_builtins(argv[1]);
    check_errors();
    printf("%d cases, %d failures\n", count, failures);
    return failures == 0 ? 0 : 1;
}
