// Every decision here takes its clock as a `Timestamp` (TabTime's): users of TabDelivery have it with it.
@_exported import TabTime
