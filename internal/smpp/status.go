package smpp

import (
	"fmt"
	"slices"
)

// Status is a PDU's command_status: 0 (StatusOK) in requests and in
// successful responses, an error code otherwise.
type Status uint32

// The command_status values of SMPP 3.4 (section 5.1.3). Values 0x400 to
// 0x4FF are reserved for SMSC vendors; they have no names here.
const (
	StatusOK              Status = 0x00000000 // ESME_ROK: no error
	StatusInvMsgLen       Status = 0x00000001 // ESME_RINVMSGLEN: message length is invalid
	StatusInvCmdLen       Status = 0x00000002 // ESME_RINVCMDLEN: command length is invalid
	StatusInvCmdID        Status = 0x00000003 // ESME_RINVCMDID: invalid command ID
	StatusInvBndSts       Status = 0x00000004 // ESME_RINVBNDSTS: incorrect bind status for the command
	StatusAlyBnd          Status = 0x00000005 // ESME_RALYBND: already bound
	StatusInvPrtFlg       Status = 0x00000006 // ESME_RINVPRTFLG: invalid priority flag
	StatusInvRegDlvFlg    Status = 0x00000007 // ESME_RINVREGDLVFLG: invalid registered delivery flag
	StatusSysErr          Status = 0x00000008 // ESME_RSYSERR: system error
	StatusInvSrcAdr       Status = 0x0000000A // ESME_RINVSRCADR: invalid source address
	StatusInvDstAdr       Status = 0x0000000B // ESME_RINVDSTADR: invalid destination address
	StatusInvMsgID        Status = 0x0000000C // ESME_RINVMSGID: message ID is invalid
	StatusBindFail        Status = 0x0000000D // ESME_RBINDFAIL: bind failed
	StatusInvPaswd        Status = 0x0000000E // ESME_RINVPASWD: invalid password
	StatusInvSysID        Status = 0x0000000F // ESME_RINVSYSID: invalid system ID
	StatusCancelFail      Status = 0x00000011 // ESME_RCANCELFAIL: cancel_sm failed
	StatusReplaceFail     Status = 0x00000013 // ESME_RREPLACEFAIL: replace_sm failed
	StatusMsgQFul         Status = 0x00000014 // ESME_RMSGQFUL: message queue full
	StatusInvSerTyp       Status = 0x00000015 // ESME_RINVSERTYP: invalid service type
	StatusInvNumDests     Status = 0x00000033 // ESME_RINVNUMDESTS: invalid number of destinations
	StatusInvDLName       Status = 0x00000034 // ESME_RINVDLNAME: invalid distribution list name
	StatusInvDestFlag     Status = 0x00000040 // ESME_RINVDESTFLAG: invalid destination flag
	StatusInvSubRep       Status = 0x00000042 // ESME_RINVSUBREP: invalid submit with replace request
	StatusInvESMClass     Status = 0x00000043 // ESME_RINVESMCLASS: invalid esm_class field data
	StatusCntSubDL        Status = 0x00000044 // ESME_RCNTSUBDL: cannot submit to distribution list
	StatusSubmitFail      Status = 0x00000045 // ESME_RSUBMITFAIL: submit_sm or submit_multi failed
	StatusInvSrcTON       Status = 0x00000048 // ESME_RINVSRCTON: invalid source address TON
	StatusInvSrcNPI       Status = 0x00000049 // ESME_RINVSRCNPI: invalid source address NPI
	StatusInvDstTON       Status = 0x00000050 // ESME_RINVDSTTON: invalid destination address TON
	StatusInvDstNPI       Status = 0x00000051 // ESME_RINVDSTNPI: invalid destination address NPI
	StatusInvSysTyp       Status = 0x00000053 // ESME_RINVSYSTYP: invalid system_type field
	StatusInvRepFlag      Status = 0x00000054 // ESME_RINVREPFLAG: invalid replace_if_present flag
	StatusInvNumMsgs      Status = 0x00000055 // ESME_RINVNUMMSGS: invalid number of messages
	StatusThrottled       Status = 0x00000058 // ESME_RTHROTTLED: throttling error (the ESME exceeded its allowed rate)
	StatusInvSched        Status = 0x00000061 // ESME_RINVSCHED: invalid scheduled delivery time
	StatusInvExpiry       Status = 0x00000062 // ESME_RINVEXPIRY: invalid validity period
	StatusInvDftMsgID     Status = 0x00000063 // ESME_RINVDFTMSGID: predefined message invalid or not found
	StatusXTAppn          Status = 0x00000064 // ESME_RX_T_APPN: ESME receiver temporary application error
	StatusXPAppn          Status = 0x00000065 // ESME_RX_P_APPN: ESME receiver permanent application error
	StatusXRAppn          Status = 0x00000066 // ESME_RX_R_APPN: ESME receiver reject message error
	StatusQueryFail       Status = 0x00000067 // ESME_RQUERYFAIL: query_sm failed
	StatusInvOptParStream Status = 0x000000C0 // ESME_RINVOPTPARSTREAM: error in the optional part of the PDU body
	StatusOptParNotAllwd  Status = 0x000000C1 // ESME_ROPTPARNOTALLWD: optional parameter not allowed
	StatusInvParLen       Status = 0x000000C2 // ESME_RINVPARLEN: invalid parameter length
	StatusMissingOptParam Status = 0x000000C3 // ESME_RMISSINGOPTPARAM: expected optional parameter missing
	StatusInvOptParamVal  Status = 0x000000C4 // ESME_RINVOPTPARAMVAL: invalid optional parameter value
	StatusDeliveryFailure Status = 0x000000FE // ESME_RDELIVERYFAILURE: delivery failure (data_sm_resp)
	StatusUnknownErr      Status = 0x000000FF // ESME_RUNKNOWNERR: unknown error
)

// statusNames is the one table of command_status names.
var statusNames = map[Status]string{
	StatusOK:              "ESME_ROK",
	StatusInvMsgLen:       "ESME_RINVMSGLEN",
	StatusInvCmdLen:       "ESME_RINVCMDLEN",
	StatusInvCmdID:        "ESME_RINVCMDID",
	StatusInvBndSts:       "ESME_RINVBNDSTS",
	StatusAlyBnd:          "ESME_RALYBND",
	StatusInvPrtFlg:       "ESME_RINVPRTFLG",
	StatusInvRegDlvFlg:    "ESME_RINVREGDLVFLG",
	StatusSysErr:          "ESME_RSYSERR",
	StatusInvSrcAdr:       "ESME_RINVSRCADR",
	StatusInvDstAdr:       "ESME_RINVDSTADR",
	StatusInvMsgID:        "ESME_RINVMSGID",
	StatusBindFail:        "ESME_RBINDFAIL",
	StatusInvPaswd:        "ESME_RINVPASWD",
	StatusInvSysID:        "ESME_RINVSYSID",
	StatusCancelFail:      "ESME_RCANCELFAIL",
	StatusReplaceFail:     "ESME_RREPLACEFAIL",
	StatusMsgQFul:         "ESME_RMSGQFUL",
	StatusInvSerTyp:       "ESME_RINVSERTYP",
	StatusInvNumDests:     "ESME_RINVNUMDESTS",
	StatusInvDLName:       "ESME_RINVDLNAME",
	StatusInvDestFlag:     "ESME_RINVDESTFLAG",
	StatusInvSubRep:       "ESME_RINVSUBREP",
	StatusInvESMClass:     "ESME_RINVESMCLASS",
	StatusCntSubDL:        "ESME_RCNTSUBDL",
	StatusSubmitFail:      "ESME_RSUBMITFAIL",
	StatusInvSrcTON:       "ESME_RINVSRCTON",
	StatusInvSrcNPI:       "ESME_RINVSRCNPI",
	StatusInvDstTON:       "ESME_RINVDSTTON",
	StatusInvDstNPI:       "ESME_RINVDSTNPI",
	StatusInvSysTyp:       "ESME_RINVSYSTYP",
	StatusInvRepFlag:      "ESME_RINVREPFLAG",
	StatusInvNumMsgs:      "ESME_RINVNUMMSGS",
	StatusThrottled:       "ESME_RTHROTTLED",
	StatusInvSched:        "ESME_RINVSCHED",
	StatusInvExpiry:       "ESME_RINVEXPIRY",
	StatusInvDftMsgID:     "ESME_RINVDFTMSGID",
	StatusXTAppn:          "ESME_RX_T_APPN",
	StatusXPAppn:          "ESME_RX_P_APPN",
	StatusXRAppn:          "ESME_RX_R_APPN",
	StatusQueryFail:       "ESME_RQUERYFAIL",
	StatusInvOptParStream: "ESME_RINVOPTPARSTREAM",
	StatusOptParNotAllwd:  "ESME_ROPTPARNOTALLWD",
	StatusInvParLen:       "ESME_RINVPARLEN",
	StatusMissingOptParam: "ESME_RMISSINGOPTPARAM",
	StatusInvOptParamVal:  "ESME_RINVOPTPARAMVAL",
	StatusDeliveryFailure: "ESME_RDELIVERYFAILURE",
	StatusUnknownErr:      "ESME_RUNKNOWNERR",
}

// Statuses returns every command_status SMPP 3.4 names, in ascending
// order.
func Statuses() []Status {
	s := make([]Status, 0, len(statusNames))
	for st := range statusNames {
		s = append(s, st)
	}
	slices.Sort(s)
	return s
}

// Name returns the status's SMPP name ("ESME_RTHROTTLED"), or "" for a
// value SMPP 3.4 does not name (vendor-specific or reserved).
func (s Status) Name() string { return statusNames[s] }

// Hex returns the status as SMPP documents write it: "0x00000058".
func (s Status) Hex() string { return fmt.Sprintf("0x%08X", uint32(s)) }

// String returns the name and the value, "ESME_RTHROTTLED (0x00000058)",
// or the value alone for an unnamed status.
func (s Status) String() string {
	if n := s.Name(); n != "" {
		return n + " (" + s.Hex() + ")"
	}
	return s.Hex()
}

// StatusError is a non-zero command_status in a response: what Submit
// returns when the SMSC refused a submit_sm, and what a failed bind
// reports.
type StatusError struct {
	Command CommandID
	Status  Status
}

func (e *StatusError) Error() string { return e.Command.String() + ": " + e.Status.String() }
