// The drain-job endpoints of Mooncake's master, in its JSON (daemon/drain_jobs.h does the
// work). Cluster endpoints: a standby answers them 503 naming the leader, as the others.
//   POST /api/v1/drain_jobs  {"segments":[N..],"target_segments":[..],"max_concurrency":4}
//        -> {"success":true,"job_id":ID,"status":"CREATED","error_code":0,"error_message":""}
//   GET  /api/v1/drain_jobs/query?job_id=ID   -> the job: status, units, migrated_bytes, ...
//   POST /api/v1/drain_jobs/cancel?job_id=ID  ->
//   {"success":true,"job_id":ID,"status":"CANCELED",...}
//                                                (a job that had failed: "FAILED")
//   GET  /api/v1/segments/status?segment=N    -> {"success":true,"segment":N,"status":1,
//                                                 "status_name":"OK",...} (DRAINING, DRAINED)
// Errors: {"success":false,"error_code":C,"error_message":M} with 400 (-600, a malformed body
// or job id), 404 (-101 SEGMENT_NOT_FOUND, or "JOB_NOT_FOUND" for an unknown job).
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "daemon/drain_jobs.h"
#include "daemon/metrics_http.h"

namespace mooncake {
namespace {

constexpr const char* kJson = "application/json; charset=utf-8";
constexpr int kInvalidParams = -600;    // Mooncake's INVALID_PARAMS
constexpr int kSegmentNotFound = -101;  // Mooncake's SEGMENT_NOT_FOUND
constexpr int kInternalError = -1;

void Answer(httplib::Response& res, int http_status, const nlohmann::json& body) {
    res.status = http_status;
    res.set_content(body.dump(), kJson);
}

void Error(httplib::Response& res, int http_status, int code, const std::string& message) {
    Answer(res, http_status,
           {{"success", false}, {"error_code", code}, {"error_message", message}});
}

// A refusal of DrainJobs as Mooncake answers it.
void Refused(httplib::Response& res, const Status& st, bool job) {
    if (st.Is(StatusCode::kInvalidArgument)) {
        Error(res, 400, kInvalidParams, st.message());
    } else if (st.Is(StatusCode::kNotFound)) {
        Error(res, 404, job ? kInternalError : kSegmentNotFound,
              std::string(job ? "JOB_NOT_FOUND: " : "SEGMENT_NOT_FOUND: ") + st.message());
    } else {
        Error(res, 500, kInternalError, st.message());
    }
}

// The job_id query parameter, a UUID (8-4-4-4-12 hex digits); "" when missing or malformed.
std::string JobId(const httplib::Request& req) {
    const std::string id = req.get_param_value("job_id");
    if (id.size() != 36) return "";
    for (size_t i = 0; i < id.size(); ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? id[i] != '-' : !std::isxdigit(static_cast<unsigned char>(id[i]))) return "";
    }
    return id;
}

// A JSON array of strings at body[field] (absent: empty); false if it is anything else.
bool Strings(const nlohmann::json& body, const char* field, std::vector<std::string>& out) {
    if (!body.contains(field)) return true;
    const nlohmann::json& list = body[field];
    if (!list.is_array()) return false;
    for (const nlohmann::json& item : list) {
        if (!item.is_string()) return false;
        out.push_back(item.get<std::string>());
    }
    return true;
}

bool NoDrains(const MasterHttpView& v, httplib::Response& res) {
    if (v.drains) return false;
    Error(res, 404, kInternalError, "this master runs no drain jobs");
    return true;
}

}  // namespace

void MetricsHttp::AddDrainEndpoints() {
    server_->Post(
        "/api/v1/drain_jobs",
        Cluster([](const MasterHttpView& v, const httplib::Request& req, httplib::Response& res) {
            if (NoDrains(v, res)) return;
            const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
            DrainJobs::Request request;
            if (body.is_discarded() || !body.is_object()) {
                Error(res, 400, kInvalidParams, "Invalid JSON body: an object is expected");
                return;
            }
            if (!Strings(body, "segments", request.segments) ||
                !Strings(body, "target_segments", request.target_segments)) {
                Error(res, 400, kInvalidParams,
                      "Invalid JSON body: segments and target_segments are lists of names");
                return;
            }
            if (body.contains("max_concurrency")) {
                if (!body["max_concurrency"].is_number_unsigned()) {
                    Error(res, 400, kInvalidParams, "Invalid JSON body: max_concurrency is 1..64");
                    return;
                }
                request.max_concurrency = static_cast<uint32_t>(
                    std::min<uint64_t>(body["max_concurrency"].get<uint64_t>(), UINT32_MAX));
            }
            Result<std::string> id = v.drains->Create(request);
            if (!id.ok()) return Refused(res, id.status(), /*job=*/false);
            Answer(res, 200,
                   {{"success", true},
                    {"job_id", *id},
                    {"status", "CREATED"},
                    {"error_code", 0},
                    {"error_message", ""}});
        }));
    server_->Get(
        "/api/v1/drain_jobs/query",
        Cluster([](const MasterHttpView& v, const httplib::Request& req, httplib::Response& res) {
            const std::string id = JobId(req);
            if (id.empty()) return Error(res, 400, kInvalidParams, "Missing or invalid job_id");
            if (NoDrains(v, res)) return;
            Result<DrainJobs::JobView> job = v.drains->Query(id);
            if (!job.ok()) return Refused(res, job.status(), /*job=*/true);
            Answer(res, 200,
                   {{"success", true},
                    {"job_id", job->id},
                    {"type", 0},
                    {"type_name", "DRAIN"},
                    {"status", static_cast<int>(job->status)},
                    {"status_name", DrainJobs::JobStatusName(job->status)},
                    {"created_at_ms_epoch", job->created_at_ms},
                    {"last_updated_at_ms_epoch", job->updated_at_ms},
                    {"segments", job->segments},
                    {"succeeded_units", job->succeeded_units},
                    {"failed_units", job->failed_units},
                    {"blocked_units", job->blocked_units},
                    {"active_units", job->active_units},
                    {"migrated_bytes", job->migrated_bytes},
                    {"message", job->message},
                    {"error_code", 0},
                    {"error_message", ""}});
        }));
    server_->Post(
        "/api/v1/drain_jobs/cancel",
        Cluster([](const MasterHttpView& v, const httplib::Request& req, httplib::Response& res) {
            const std::string id = JobId(req);
            if (id.empty()) return Error(res, 400, kInvalidParams, "Missing or invalid job_id");
            if (NoDrains(v, res)) return;
            Result<DrainJobs::JobStatus> status = v.drains->Cancel(id);
            if (!status.ok()) return Refused(res, status.status(), /*job=*/true);
            Answer(res, 200,
                   {{"success", true},
                    {"job_id", id},
                    {"status", DrainJobs::JobStatusName(*status)},
                    {"error_code", 0},
                    {"error_message", ""}});
        }));
    server_->Get(
        "/api/v1/segments/status",
        Cluster([](const MasterHttpView& v, const httplib::Request& req, httplib::Response& res) {
            const std::string segment = req.get_param_value("segment");
            if (segment.empty()) {
                return Error(res, 400, kInvalidParams, "Missing segment query parameter");
            }
            if (NoDrains(v, res)) return;
            Result<SegmentState> state = v.drains->SegmentStatus(segment);
            if (!state.ok()) return Refused(res, state.status(), /*job=*/false);
            Answer(res, 200,
                   {{"success", true},
                    {"segment", segment},
                    {"status", static_cast<int>(*state)},
                    {"status_name", SegmentStateName(*state)},
                    {"error_code", 0},
                    {"error_message", ""}});
        }));
}

}  // namespace mooncake
